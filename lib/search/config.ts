import path from "node:path";
import { DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE } from "./chunking";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS, type LocalModelName } from "./models";
import { DEFAULT_HYBRID_ALPHA } from "./fusion";
import { RERANK_APIS } from "./rerank";
import { numberEnv, oneOfEnv, type Env } from "../env";

/**
 * Cosine similarity below which a vector hit is not a candidate, per model. Thresholds are model-specific:
 * the bundled model's value was calibrated on the contract corpus (see docs/search.md); for any other model
 * set SEARCH_MIN_SIMILARITY after calibrating it, or no threshold applies.
 */
export const MIN_SIMILARITY_BY_MODEL: Record<string, number> = { "use-lite-512": 0.15 };

/**
 * Prior weight of the vector list in hybrid fusion per bundled model (fuseLists; each query's confidences
 * then shift it), cross-validated on SciFact and WordNet by `npm run bench:relevance` (docs/search.md,
 * decision 38). USE lite, a third as good as keyword on SciFact, gets 0: its hybrid ranking is the keyword
 * ranking. Other models get an even prior unless HYBRID_ALPHA is set.
 */
export const HYBRID_ALPHA_BY_MODEL: Record<string, number> = { "all-minilm-l6-v2": 0.6, "use-lite-512": 0 };

/** How long the reranker has per query before the fused order is served unchanged. */
export const DEFAULT_RERANK_TIMEOUT_MS = 5_000;
/** Candidates reranked per query unless it says otherwise (a cross-encoder's cost grows with each). */
export const DEFAULT_RERANK_TOP_N = 30;
/** Most candidates one query may send to the reranker. */
export const MAX_RERANK_TOP_N = 100;

/** The search settings of the configuration tree (lib/config.ts). */
export function searchConfig(env: Env) {
  const typesenseUrl = env.TYPESENSE_URL ?? "";
  const provider = oneOfEnv(env, "EMBEDDING_PROVIDER", ["local", "openai", "none"] as const, "local");
  const model =
    provider === "openai"
      ? env.EMBEDDING_MODEL || "text-embedding-3-small"
      : oneOfEnv(env, "EMBEDDING_MODEL", Object.keys(LOCAL_MODELS) as LocalModelName[], DEFAULT_LOCAL_MODEL);
  if (provider === "openai" && !env.EMBEDDING_URL) throw new Error("EMBEDDING_PROVIDER=openai needs EMBEDDING_URL");
  const minSimilarity = numberEnv(env, "SEARCH_MIN_SIMILARITY", MIN_SIMILARITY_BY_MODEL[model] ?? -1, { min: -1, max: 1 });
  return {
    engine: oneOfEnv(env, "SEARCH_ENGINE", ["embedded", "typesense"] as const, typesenseUrl ? "typesense" : "embedded"),
    typesense: {
      url: typesenseUrl,
      apiKey: env.TYPESENSE_API_KEY ?? "",
      collection: env.TYPESENSE_COLLECTION || "knowledge_chunks",
    },
    embedding: {
      provider,
      url: env.EMBEDDING_URL ?? "",
      model,
      apiKey: env.EMBEDDING_API_KEY ?? "",
      dimensions:
        provider === "openai" ? numberEnv(env, "EMBEDDING_DIMENSIONS", 1536, { min: 1, max: 8192 }) : LOCAL_MODELS[model as LocalModelName].dimensions,
      batchSize: numberEnv(env, "EMBEDDING_BATCH_SIZE", 16, { min: 1, max: 512 }),
      /** Worker threads of the bundled model (each runs the model on one core), and batches in flight. */
      workers: Math.floor(numberEnv(env, "EMBEDDING_WORKERS", 2, { min: 1, max: 64 })),
    },
    /** The optional rerank stage after fusion (off without RERANK_URL); docs/adr/0056-rerank-and-hybrid-weight.md. */
    rerank: {
      url: env.RERANK_URL ?? "",
      model: env.RERANK_MODEL ?? "",
      apiKey: env.RERANK_API_KEY ?? "",
      api: oneOfEnv(env, "RERANK_API", RERANK_APIS, "cohere"),
      timeoutMs: numberEnv(env, "RERANK_TIMEOUT_MS", DEFAULT_RERANK_TIMEOUT_MS, { min: 100, max: 120_000, integer: true }),
      topN: numberEnv(env, "RERANK_TOP_N", DEFAULT_RERANK_TOP_N, { min: 1, max: MAX_RERANK_TOP_N, integer: true }),
    },
    hybridAlpha: numberEnv(env, "HYBRID_ALPHA", HYBRID_ALPHA_BY_MODEL[model] ?? DEFAULT_HYBRID_ALPHA, { min: 0, max: 1 }),
    /** As a cosine distance (what both engines filter on). */
    maxDistance: 1 - minSimilarity,
    chunkSize: numberEnv(env, "SEARCH_CHUNK_SIZE", DEFAULT_CHUNK_SIZE, { min: 100, max: 20_000 }),
    chunkOverlap: numberEnv(env, "SEARCH_CHUNK_OVERLAP", DEFAULT_CHUNK_OVERLAP, { min: 0, max: 10_000 }),
    /** Snapshots of the embedded index (see docs/search.md); MongoDB stays the source of truth. */
    snapshots: {
      enabled: oneOfEnv(env, "SEARCH_SNAPSHOTS", ["on", "off"] as const, "on") === "on",
      /** Root directory; each database gets a sub-directory, each account one below it. */
      dir: path.resolve(env.SEARCH_SNAPSHOT_DIR || path.join(env.DATA_DIR || "data", "search")),
      settleMs: numberEnv(env, "SEARCH_SNAPSHOT_SETTLE_MS", 5_000, { min: 0, max: 3_600_000 }),
      maxDelayMs: numberEnv(env, "SEARCH_SNAPSHOT_MAX_DELAY_MS", 60_000, { min: 0, max: 86_400_000 }),
    },
  };
}

export type SearchConfig = ReturnType<typeof searchConfig>;
