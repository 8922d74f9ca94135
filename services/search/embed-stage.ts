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
/** Chunks held in memory; more wait in the durable queue and are read back as the stage catches up. */
const DEFAULT_MAX_QUEUED = 2_000;
/** Window of the reported embedding rate. */
const RATE_WINDOW_MS = 60_000;

/** How far the embedding stage of this process is (GET /knowledge/documents/stats). */
export interface EmbedProgress {
  /** Chunks waiting in this process's memory, plus those in flight. */
  queued: number;
  /** Chunks left in the durable queue only (more than memory holds), read back as the stage catches up. */
  overflow: boolean;
  /** Chunks embedded per second over the last minute (0 when idle). */
  ratePerSecond: number;
  /** Batches embedded at once (one per embedding worker). */
  concurrency: number;
}

/**
 * The embedding stage: chunks are stored and keyword-searchable before it runs; it embeds them in batches
 * (each text once per model: the cache is keyed by model and text hash), writes the vectors to MongoDB and
 * adds them to the index. Its queue is durable as search_pending_embeddings, so a restart resumes it.
 * `concurrency` batches run at once, so every embedding worker has work while another batch is written.
 * Back-pressure: memory holds at most `maxQueued` chunks; beyond that new chunks stay only in the durable
 * queue and are read back from it when memory has drained, so a huge load never grows the process.
 */
export class EmbedStage {
  private queue: EmbedJob[] = [];
  /** Chunk ids queued in memory or in flight: a chunk is never embedded twice at once. */
  private readonly known = new Set<string>();
  private inFlight = 0;
  private overflowed = false;
  private refilling?: Promise<void>;
  private stopped = false;
  private backoffMs = 0;
  private timer?: NodeJS.Timeout;
  private idleWaiters: (() => void)[] = [];
  private readonly running = new Set<Promise<void>>();
  /** [time, chunks] of recent batches, for the rate. */
  private readonly done: [number, number][] = [];
  private readonly concurrency: number;
  private readonly maxQueued: number;

  constructor(
    private readonly deps: {
      provider: EmbeddingProvider;
      models: SearchModels;
      index: SearchIndex;
      logger: Logger;
      batchSize: number;
      /** Batches in flight (default 1). */
      concurrency?: number;
      maxQueued?: number;
      generations?: IndexGenerations;
    },
  ) {
    this.concurrency = Math.max(1, deps.concurrency ?? 1);
    this.maxQueued = Math.max(deps.batchSize, deps.maxQueued ?? DEFAULT_MAX_QUEUED);
  }

  /** Chunks waiting in this process (memory and in flight). */
  get backlog(): number {
    return this.known.size;
  }

  progress(now = Date.now()): EmbedProgress {
    while (this.done.length && this.done[0]![0] < now - RATE_WINDOW_MS) this.done.shift();
    const chunks = this.done.reduce((s, [, n]) => s + n, 0);
    const since = this.done.length ? Math.max(1_000, now - this.done[0]![0]) : RATE_WINDOW_MS;
    return {
      queued: this.known.size,
      overflow: this.overflowed,
      ratePerSecond: Math.round((chunks / since) * 10_000) / 10,
      concurrency: this.concurrency,
    };
  }

  enqueue(jobs: EmbedJob[]) {
    if (this.stopped) return;
    for (const job of jobs) {
      if (this.known.has(job.chunkId)) continue;
      if (this.queue.length >= this.maxQueued) {
        this.overflowed = true;
        continue;
      }
      this.known.add(job.chunkId);
      this.queue.push(job);
    }
    this.kick();
  }

  /**
   * Re-queues what the durable queue holds and this process has not queued: what a previous process left, what
   * overflowed memory, or what a replica that stopped or died held (another live replica may embed some of it
   * too; that is harmless).
   */
  async recover() {
    this.overflowed = false;
    const pending = await this.deps.models.pending.find({}, { _id: 1 }).lean();
    const missing = pending.filter((p) => !this.known.has(p._id));
    for (let i = 0; i < missing.length && !this.stopped; i += 100) {
      if (this.queue.length >= this.maxQueued) {
        this.overflowed = true;
        break;
      }
      const chunks = await Promise.all(
        missing.slice(i, i + 100).map((p) => this.deps.models.chunks.findById(p._id, { vector: 0 }).lean()),
      );
      const jobs: EmbedJob[] = [];
      for (const [j, c] of chunks.entries()) {
        if (c) jobs.push({ accountId: c.account_id, chunkId: c._id, embedKey: c.embed_key, text: embedText(c.title, c.content) });
        else await this.deps.models.pending.deleteOne({ _id: missing[i + j]!._id });
      }
      this.enqueue(jobs);
    }
  }

  private kick() {
    if (this.timer || this.stopped) return;
    while (this.inFlight < this.concurrency && this.queue.length) {
      const batch = this.queue.splice(0, this.deps.batchSize);
      this.inFlight++;
      const run = this.run(batch).finally(() => {
        this.inFlight--;
        this.running.delete(run);
        this.kick();
      });
      this.running.add(run);
    }
    if (!this.queue.length && !this.inFlight) {
      if (this.overflowed && !this.refilling && !this.stopped) {
        this.refilling = this.recover()
          .catch((err) => this.deps.logger.warn("Reading the embedding queue back failed", (err as Error).message))
          .finally(() => {
            this.refilling = undefined;
            if (!this.queue.length && !this.inFlight) this.notifyIdle();
          });
      } else if (!this.refilling) this.notifyIdle();
    }
  }

  private async run(batch: EmbedJob[]) {
    try {
      await this.process(batch);
      for (const job of batch) this.known.delete(job.chunkId);
      this.done.push([Date.now(), batch.length]);
      this.backoffMs = 0;
    } catch (err) {
      // Back to the front; nothing new starts until the pause is over.
      this.queue.unshift(...batch);
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs ? this.backoffMs * 2 : FIRST_BACKOFF_MS);
      this.deps.logger.warn(`Embedding batch failed; retrying in ${this.backoffMs} ms`, (err as Error).message);
      if (!this.timer && !this.stopped) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.kick();
        }, this.backoffMs);
        this.timer.unref();
      }
    }
  }

  private notifyIdle() {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Resolves when nothing is queued or in progress (tests and the benchmark wait on it). */
  idle(): Promise<void> {
    if (!this.queue.length && !this.inFlight && !this.refilling && !this.overflowed) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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
    this.timer = undefined;
    await Promise.all([...this.running, this.refilling]);
    this.notifyIdle();
  }
}
