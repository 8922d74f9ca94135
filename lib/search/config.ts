import path from "node:path";
import { DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE } from "./chunking";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS, type LocalModelName } from "./embeddings";
import { DEFAULT_HYBRID_ALPHA } from "./fusion";

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

function numberEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number from ${min} to ${max}, got "${raw}"`);
  return value;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!values.includes(raw as T)) throw new Error(`${name} must be one of ${values.join(", ")}, got "${raw}"`);
  return raw as T;
}

/** Every search setting read from the environment (read when the service starts; tests change env between files). */
export function searchConfig(env: NodeJS.ProcessEnv = process.env) {
  const typesenseUrl = env.TYPESENSE_URL ?? "";
  const provider = oneOf(env, "EMBEDDING_PROVIDER", ["local", "openai", "none"] as const, "local");
  const model =
    provider === "openai"
      ? env.EMBEDDING_MODEL || "text-embedding-3-small"
      : oneOf(env, "EMBEDDING_MODEL", Object.keys(LOCAL_MODELS) as LocalModelName[], DEFAULT_LOCAL_MODEL);
  if (provider === "openai" && !env.EMBEDDING_URL) throw new Error("EMBEDDING_PROVIDER=openai needs EMBEDDING_URL");
  const minSimilarity = numberEnv(env, "SEARCH_MIN_SIMILARITY", MIN_SIMILARITY_BY_MODEL[model] ?? -1, -1, 1);
  return {
    engine: oneOf(env, "SEARCH_ENGINE", ["embedded", "typesense"] as const, typesenseUrl ? "typesense" : "embedded"),
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
        provider === "openai" ? numberEnv(env, "EMBEDDING_DIMENSIONS", 1536, 1, 8192) : LOCAL_MODELS[model as LocalModelName].dimensions,
      batchSize: numberEnv(env, "EMBEDDING_BATCH_SIZE", 16, 1, 512),
      /** Worker threads of the bundled model (each runs the model on one core), and batches in flight. */
      workers: Math.floor(numberEnv(env, "EMBEDDING_WORKERS", 2, 1, 64)),
    },
    hybridAlpha: numberEnv(env, "HYBRID_ALPHA", HYBRID_ALPHA_BY_MODEL[model] ?? DEFAULT_HYBRID_ALPHA, 0, 1),
    /** As a cosine distance (what both engines filter on). */
    maxDistance: 1 - minSimilarity,
    chunkSize: numberEnv(env, "SEARCH_CHUNK_SIZE", DEFAULT_CHUNK_SIZE, 100, 20_000),
    chunkOverlap: numberEnv(env, "SEARCH_CHUNK_OVERLAP", DEFAULT_CHUNK_OVERLAP, 0, 10_000),
    /** Snapshots of the embedded index (see docs/search.md); MongoDB stays the source of truth. */
    snapshots: {
      enabled: oneOf(env, "SEARCH_SNAPSHOTS", ["on", "off"] as const, "on") === "on",
      /** Root directory; each database gets a sub-directory, each account one below it. */
      dir: path.resolve(env.SEARCH_SNAPSHOT_DIR || path.join(env.DATA_DIR || "data", "search")),
      settleMs: numberEnv(env, "SEARCH_SNAPSHOT_SETTLE_MS", 5_000, 0, 3_600_000),
      maxDelayMs: numberEnv(env, "SEARCH_SNAPSHOT_MAX_DELAY_MS", 60_000, 0, 86_400_000),
    },
  };
}

export type SearchConfig = ReturnType<typeof searchConfig>;
