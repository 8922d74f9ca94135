import type { Logger } from "moleculer";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import type { SearchIndex } from "../../lib/search/port";
import { bufferToVector } from "../../lib/search/vectors";
import type { EmbedStage } from "./embed-stage";
import type { ChunkRecord, SearchModels } from "./model";
import { embedKey, embedText } from "./rules";
import { documentMetadata, toIndexed } from "./store";

/** search_index_state `_id` of the record naming the model every stored vector comes from. */
export const EMBEDDING_MODEL_MARKER = "embedding-model";
const MIGRATE_BATCH = 100;

/**
 * Changing the embedding model (EMBEDDING_MODEL / EMBEDDING_PROVIDER, dimensions may differ) without downtime.
 * The marker names the model of the stored vectors. When the configured model differs, semantic and hybrid
 * answer as keyword (mode_used says so) while every chunk is queued for the new model in the background:
 * - embedded engine: the index is built at start with the new dimensions and without the old vectors
 *   (rebuildEmbedded skips vectors whose embedding key names another model; snapshots are not loaded);
 * - Typesense: the collection searched keeps answering, every chunk is copied into the new model's
 *   collection first, and when all are embedded the alias is moved to it (finishModelSwitch).
 * Then the marker is moved and vector search comes back for every query at once. A restart in the middle
 * resumes (the durable queue, the marker not moved yet).
 */
export class ModelSwitch {
  /** Model of the stored vectors when a switch is under way, undefined otherwise. */
  private from?: string | null;
  private task?: Promise<void>;
  private stopped = false;

  constructor(private readonly deps: { models: SearchModels; provider: EmbeddingProvider; logger: Logger }) {}

  /** Reads the marker; true when the stored vectors are of another model (call before building the index). */
  async needed(): Promise<boolean> {
    const { models, provider } = this.deps;
    const marker = await models.state.findById(EMBEDDING_MODEL_MARKER).lean();
    if (marker?.model === provider.model) return false;
    // No marker: a database from before the marker (its vectors may be of any model) or an empty one.
    const anyChunk = await models.chunks.findOne({}, { embed_key: 1 }).lean<ChunkRecord>();
    if (!marker && (!anyChunk || anyChunk.embed_key.startsWith(`${provider.model}:`))) {
      await this.moveMarker();
      return false;
    }
    this.from = marker?.model ?? null;
    return true;
  }

  /** While true, queries get no vector (semantic and hybrid answer as keyword). */
  get switching(): boolean {
    return this.from !== undefined;
  }

  /** Queues every chunk of another model for the new one (copying chunks into the new index if the engine needs it), waits for the stage, then switches. */
  start(stage: EmbedStage, index: SearchIndex) {
    if (!this.switching || this.task) return;
    const { models, provider, logger } = this.deps;
    logger.info(`Embedding model switch ${this.from ?? "(unknown)"} -> ${provider.model}: re-embedding in the background; vector search resumes when done`);
    this.task = (async () => {
      const prefix = `${provider.model}:`;
      let queued = 0;
      let batch: ChunkRecord[] = [];
      const flush = async () => {
        const now = new Date();
        // Chunks of the new model already (a resumed switch) are copied with their vector and not queued again.
        const current = (c: ChunkRecord) => c.embed_key.startsWith(prefix) && c.vector !== null;
        if (index.copyForModelSwitch) {
          const metadata = await documentMetadata(models, batch);
          await index.copyForModelSwitch(batch.map((c) => toIndexed(c, current(c) ? bufferToVector(c.vector!) : null, metadata.get(c.document_id) ?? null)));
        }
        const jobs = batch
          .filter((c) => !current(c))
          .map((c) => ({ accountId: c.account_id, chunkId: c._id, embedKey: embedKey(provider.model, embedText(c.title, c.content)), text: embedText(c.title, c.content) }));
        // Durable first (as indexDocuments does): a restart resumes from the queue.
        await Promise.all(jobs.map((j) => models.chunks.updateOne({ _id: j.chunkId }, { $set: { embed_key: j.embedKey, vector: null } })));
        await Promise.all(jobs.map((j) => models.pending.updateOne({ _id: j.chunkId }, { $setOnInsert: { account_id: j.accountId, created_at: now } }, { upsert: true })));
        stage.enqueue(jobs);
        queued += jobs.length;
        batch = [];
      };
      // An engine with a collection per model needs every chunk copied; the embedded one only those to re-embed.
      const copies = Boolean(index.copyForModelSwitch);
      const cursor = models.chunks.find({}).lean<ChunkRecord[]>().cursor({ batchSize: MIGRATE_BATCH });
      for await (const c of cursor as AsyncIterable<ChunkRecord>) {
        if (this.stopped) return;
        if (!copies && c.embed_key.startsWith(prefix)) continue;
        batch.push(c);
        if (batch.length >= MIGRATE_BATCH) await flush();
      }
      if (batch.length) await flush();
      await stage.idle();
      while (!this.stopped && (await models.pending.countDocuments({})) > 0) {
        await new Promise((r) => setTimeout(r, 1_000));
        await stage.idle();
      }
      if (this.stopped) return;
      await index.finishModelSwitch?.();
      await this.moveMarker();
      logger.info(`Embedding model switch to ${provider.model} done: ${queued} chunks re-embedded; vector search is back`);
      this.from = undefined;
    })().catch((err) => logger.error("Embedding model switch stopped; it resumes at the next start", err));
  }

  /** Resolves when a switch under way has finished (tests). */
  async done() {
    await this.task;
  }

  /** Leaves a switch under way to the next start (call before stopping the stage). */
  async stop() {
    this.stopped = true;
  }

  private async moveMarker() {
    await this.deps.models.state.updateOne({ _id: EMBEDDING_MODEL_MARKER }, { $set: { model: this.deps.provider.model } }, { upsert: true });
  }
}
