import type { Logger } from "moleculer";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import type { SearchIndex } from "../../lib/search/port";
import { bufferToVector, vectorToBuffer } from "../../lib/search/vectors";
import { isDuplicateKeyError } from "../../lib/errors";
import type { IndexGenerations } from "./generations";
import type { SearchModels } from "./model";
import { embedText } from "./rules";

/** A chunk waiting for its vector. */
export interface EmbedJob {
  accountId: number;
  chunkId: string;
  embedKey: string;
  text: string;
}

/** Longest pause after repeated failures (e.g. the embeddings endpoint is down). */
const MAX_BACKOFF_MS = 60_000;
const FIRST_BACKOFF_MS = 1_000;

/**
 * The embedding stage: chunks are stored and keyword-searchable before it runs; it embeds them in batches
 * (each text once per model: the cache is keyed by model and text hash), writes the vectors to MongoDB and
 * adds them to the index. Its queue is durable as search_pending_embeddings, so a restart resumes it. It
 * runs in every search replica, so embedding throughput grows with replicas.
 */
export class EmbedStage {
  private queue: EmbedJob[] = [];
  private running?: Promise<void>;
  private stopped = false;
  private backoffMs = 0;
  private timer?: NodeJS.Timeout;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly deps: {
      provider: EmbeddingProvider;
      models: SearchModels;
      index: SearchIndex;
      logger: Logger;
      batchSize: number;
      generations?: IndexGenerations;
    },
  ) {}

  /** Chunks waiting in this process. */
  get backlog(): number {
    return this.queue.length;
  }

  enqueue(jobs: EmbedJob[]) {
    if (!jobs.length || this.stopped) return;
    this.queue.push(...jobs);
    this.kick();
  }

  /**
   * Re-queues what the durable queue holds and this process has not queued: what a previous process left,
   * or a replica that stopped or died (another live replica may embed some of it too; that is harmless).
   */
  async recover() {
    const queued = new Set(this.queue.map((j) => j.chunkId));
    const pending = (await this.deps.models.pending.find({}, { _id: 1 }).lean()).filter((p) => !queued.has(p._id));
    for (let i = 0; i < pending.length; i += 100) {
      const chunks = await Promise.all(
        pending.slice(i, i + 100).map((p) => this.deps.models.chunks.findById(p._id, { vector: 0 }).lean()),
      );
      const jobs: EmbedJob[] = [];
      for (const [j, c] of chunks.entries()) {
        if (c) jobs.push({ accountId: c.account_id, chunkId: c._id, embedKey: c.embed_key, text: embedText(c.title, c.content) });
        else await this.deps.models.pending.deleteOne({ _id: pending[i + j]!._id });
      }
      this.enqueue(jobs);
    }
  }

  private kick() {
    if (this.running || this.timer || this.stopped) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.queue.length && !this.stopped) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.kick();
        }, this.backoffMs);
        this.timer.unref();
      } else this.notifyIdle();
    });
  }

  private notifyIdle() {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Resolves when nothing is queued or in progress (tests and the benchmark wait on it). */
  idle(): Promise<void> {
    if (!this.queue.length && !this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async drain() {
    while (this.queue.length && !this.stopped) {
      const batch = this.queue.slice(0, this.deps.batchSize);
      try {
        await this.process(batch);
        this.queue.splice(0, batch.length);
        this.backoffMs = 0;
      } catch (err) {
        this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs ? this.backoffMs * 2 : FIRST_BACKOFF_MS);
        this.deps.logger.warn(`Embedding batch failed; retrying in ${this.backoffMs} ms`, (err as Error).message);
        return;
      }
    }
  }

  private async process(batch: EmbedJob[]) {
    const { models, provider, index } = this.deps;
    const keys = [...new Set(batch.map((j) => j.embedKey))];
    const cached = await Promise.all(keys.map((k) => models.embeddings.findById(k).lean()));
    const vectors = new Map<string, Float32Array>();
    keys.forEach((k, i) => cached[i] && vectors.set(k, bufferToVector(cached[i]!.vector)));
    const missing = keys.filter((k) => !vectors.has(k));
    if (missing.length) {
      const texts = missing.map((k) => batch.find((j) => j.embedKey === k)!.text);
      const computed = await provider.embed(texts, "batch");
      await Promise.all(
        missing.map(async (k, i) => {
          vectors.set(k, computed[i]!);
          try {
            await models.embeddings.create({ _id: k, vector: vectorToBuffer(computed[i]!) });
          } catch (err) {
            if (!isDuplicateKeyError(err)) throw err;
          }
        }),
      );
    }
    const byAccount = new Map<number, { id: string; vector: Float32Array }[]>();
    const writeVectors = async () => {
      await Promise.all(
        batch.map(async (job) => {
          const vector = vectors.get(job.embedKey)!;
          const res = await models.chunks.updateOne({ _id: job.chunkId }, { $set: { vector: vectorToBuffer(vector) } });
          if (res.matchedCount) {
            const list = byAccount.get(job.accountId) ?? [];
            list.push({ id: job.chunkId, vector });
            byAccount.set(job.accountId, list);
          }
        }),
      );
      for (const [accountId, list] of byAccount) await index.setVectors(accountId, list);
    };
    const accounts = [...new Set(batch.map((j) => j.accountId))];
    // Resumable: the batch stays in the durable queue until it is done, so a failure is redone.
    await (this.deps.generations ? this.deps.generations.write(accounts, writeVectors, { resumable: true }) : writeVectors());
    await Promise.all(batch.map((job) => models.pending.deleteOne({ _id: job.chunkId })));
  }

  async stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    this.notifyIdle();
  }
}
