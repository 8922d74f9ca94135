import path from "node:path";
import { rm } from "node:fs/promises";
import type { Logger } from "moleculer";
import type { SearchConfig } from "../../lib/search/config";
import { createSearchIndex } from "../../lib/search/engines";
import { LocalEmbeddingProvider, RemoteEmbeddingProvider, type EmbeddingProvider } from "../../lib/search/embeddings";
import type { LocalModelName } from "../../lib/search/models";
import type { SearchIndex } from "../../lib/search/port";
import { DeletionQueue } from "./deletions";
import { backfillMetadata } from "./metadata-backfill";
import { EmbedStage } from "./embed-stage";
import { IndexGenerations } from "./generations";
import type { DocumentRecord, SearchModels } from "./model";
import { ModelSwitch } from "./model-switch";
import { QueryVectors } from "./query-vectors";
import { SnapshotKeeper, type RestoreReport } from "./snapshots";
import { rebuildEmbedded, type StoreDeps } from "./store";

/** Everything a search replica runs, built once at start from the configuration. */
export interface SearchRuntime {
  index: SearchIndex;
  provider?: EmbeddingProvider;
  stage?: EmbedStage;
  modelSwitch?: ModelSwitch;
  deps: StoreDeps;
  generations: IndexGenerations;
  snapshots?: SnapshotKeeper;
  /** How the embedded index came back at start (tests and logs). */
  restoreReport?: RestoreReport;
  queryVectors: QueryVectors;
  deletions: DeletionQueue;
  /** The one-time metadata backfill of an external index (Typesense), running in the background. */
  metadataBackfill?: { stop(): void; finished: Promise<unknown> };
}

function embeddingProvider({ embedding }: SearchConfig): EmbeddingProvider | undefined {
  if (embedding.provider === "local") return new LocalEmbeddingProvider(embedding.model as LocalModelName, { workers: embedding.workers });
  if (embedding.provider === "openai") return new RemoteEmbeddingProvider(embedding.url, embedding.model, embedding.dimensions, embedding.apiKey || undefined);
  return undefined;
}

/**
 * Starts the index (embedded: restored from snapshots or rebuilt from MongoDB; Typesense: the model's
 * collection), the embedding stage with its durable queue, a model switch if the configured model is not the
 * one of the stored vectors, and the deletions left by the last run.
 */
export async function startSearch(
  config: SearchConfig,
  models: SearchModels,
  databaseName: string,
  logger: Logger,
  documentRemoved: (doc: DocumentRecord) => void,
): Promise<SearchRuntime> {
  const provider = embeddingProvider(config);
  const dimensions = provider?.dimensions ?? config.embedding.dimensions;
  const modelSwitch = provider ? new ModelSwitch({ models, provider, logger }) : undefined;
  const switching = (await modelSwitch?.needed()) ?? false;
  const { index, local: embedded } = createSearchIndex(config, { dimensions, model: provider?.model, switchingModel: switching });
  await index.start();
  const generations = new IndexGenerations(models.state);
  const deps: StoreDeps = { models, index, provider, generations, logger };
  const runtime: SearchRuntime = { index, provider, modelSwitch, deps, generations, queryVectors: new QueryVectors(provider, modelSwitch, logger), deletions: new DeletionQueue(deps, documentRemoved) };
  if (embedded && config.snapshots.enabled) {
    const { dir, settleMs, maxDelayMs } = config.snapshots;
    const databaseDir = path.join(dir, databaseName.replace(/[^\w.-]/g, "_"));
    // Snapshots hold the previous model's vectors: rebuilt from MongoDB, without them.
    if (switching) await rm(databaseDir, { recursive: true, force: true });
    runtime.snapshots = new SnapshotKeeper({ engine: embedded, generations, dir: databaseDir, settleMs, maxDelayMs, logger });
    const r = (runtime.restoreReport = await runtime.snapshots.restore(deps));
    logger.info(
      `Embedded search index in ${r.ms} ms: ${r.fromSnapshot.length} accounts (${r.chunksFromSnapshots} chunks) from snapshots, ` +
        `${r.rebuilt.length} accounts (${r.chunksFromMongo} chunks) rebuilt from MongoDB${r.firstStart ? " (first start with snapshots)" : ""}`,
    );
    for (const [account, reason] of Object.entries(r.reasons)) logger.info(`Search index of account ${account} rebuilt: ${reason}`);
  } else if (embedded) {
    const started = Date.now();
    const n = await rebuildEmbedded(deps, embedded);
    logger.info(`Embedded search index rebuilt from MongoDB: ${n.chunks} chunks in ${Date.now() - started} ms`);
  }
  if (provider) {
    const stage = new EmbedStage({
      provider,
      models,
      index,
      logger,
      batchSize: config.embedding.batchSize,
      concurrency: config.embedding.workers,
      generations,
    });
    runtime.stage = deps.stage = stage;
    await stage.recover();
    modelSwitch?.start(stage, index);
    if (provider instanceof LocalEmbeddingProvider) provider.warmUp().catch((err) => logger.warn("Embedding model failed to load", err));
  }
  await runtime.deletions.resume();
  if (!embedded) {
    let stopped = false;
    const finished = backfillMetadata(deps, () => stopped).catch((err) => logger.warn("Search filters: metadata backfill failed; the next start retries", err));
    runtime.metadataBackfill = { stop: () => (stopped = true), finished };
  }
  return runtime;
}

export async function stopSearch(runtime: SearchRuntime) {
  runtime.metadataBackfill?.stop();
  await runtime.metadataBackfill?.finished;
  await runtime.modelSwitch?.stop();
  await runtime.stage?.stop();
  await runtime.deletions.drain();
  // The last snapshots, so the next start loads instead of rebuilding.
  await runtime.snapshots?.flush();
  await runtime.provider?.close();
  await runtime.index.stop();
}
