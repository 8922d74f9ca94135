/**
 * Embedded search engine benchmark: 100,000 chunks (BENCH_CHUNKS) of 1000 characters with 512-d vectors.
 * Prints index rate, p50/p99 latency per mode at 1 and 8 concurrent clients, memory, HNSW recall@10
 * against exact search, and restart time (rebuild from MongoDB; BENCH_RESTART=0 skips it).
 *
 *   npm run bench:search            (BENCH_CHUNKS=20000 for a quick run)
 */
import { performance } from "node:perf_hooks";
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { EmbeddedEngine } from "../../lib/search/embedded-engine";
import type { IndexedChunk, IndexQuery, SearchMode } from "../../lib/search/port";
import mongoose from "mongoose";
import { startLocalMongo } from "../../lib/local-mongo";
import { vectorToBuffer } from "../../lib/search/vectors";
import { searchModels } from "../../services/search/model";
import { rebuildEmbedded } from "../../services/search/store";
import { syntheticCorpus } from "./synthetic";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const ACCOUNT = 1;
const DIMENSIONS = 512;

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function memoryMb() {
  global.gc?.();
  const m = process.memoryUsage();
  return { rss: Math.round(m.rss / 2 ** 20), heap: Math.round(m.heapUsed / 2 ** 20), external: Math.round((m.external + m.arrayBuffers) / 2 ** 20) };
}

function chunkOf(corpus: ReturnType<typeof syntheticCorpus>, i: number): IndexedChunk {
  const c = corpus.chunk(i);
  return {
    id: `c${i}`,
    accountId: ACCOUNT,
    sourceId: 1 + (i % 10),
    documentId: `d${Math.floor(i / 4)}`,
    position: i % 4,
    title: c.title,
    url: `https://bench.example/${Math.floor(i / 4)}`,
    content: c.content,
    vector: c.vector,
    indexedAt: Date.now(),
  };
}

async function latency(engine: EmbeddedEngine, queries: IndexQuery[], clients: number) {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < queries.length) {
        const q = queries[next++]!;
        const t0 = performance.now();
        // Each client waits its turn on the event loop, as concurrent requests to one process do.
        await new Promise((r) => setImmediate(r));
        await engine.search(q);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), qps: queries.length / elapsed };
}

async function restartFromMongo(chunks: number) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-search-"));
  const local = await startLocalMongo({ dataDir });
  const db = await mongoose.createConnection(`${local.url}/bench`).asPromise();
  try {
    const models = searchModels(db);
    const corpus = syntheticCorpus();
    const t0 = performance.now();
    for (let i = 0; i < chunks; i += 1000) {
      const docs = [];
      for (let j = i; j < Math.min(chunks, i + 1000); j++) {
        const c = chunkOf(corpus, j);
        docs.push({
          _id: c.id, account_id: c.accountId, source_id: c.sourceId, document_id: c.documentId, position: c.position,
          title: c.title, url: c.url, content: c.content, embed_key: c.id, vector: vectorToBuffer(c.vector!), indexed_at: new Date(),
        });
      }
      await models.chunks.collection.insertMany(docs as never[], { ordered: false });
    }
    const writeSeconds = (performance.now() - t0) / 1000;
    const engine = new EmbeddedEngine({ dimensions: DIMENSIONS });
    const t1 = performance.now();
    const noop = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {} };
    const n = await rebuildEmbedded({ models, index: engine, logger: noop as never }, engine);
    const restartSeconds = (performance.now() - t1) / 1000;
    return { n, writeSeconds, restartSeconds };
  } finally {
    await db.close();
    await local.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const corpus = syntheticCorpus();
  const engine = new EmbeddedEngine({ dimensions: DIMENSIONS });
  const base = memoryMb();
  console.log(`embedded engine benchmark: ${CHUNKS} chunks x 1000 chars, ${DIMENSIONS}-d vectors, ${QUERIES} queries, node ${process.version}, ${os.cpus().length} cores`);

  // Index: keyword + vectors (the HNSW graph takes over at 5,000 vectors).
  const t0 = performance.now();
  let keywordMs = 0;
  for (let i = 0; i < CHUNKS; i += 1000) {
    const batch: IndexedChunk[] = [];
    for (let j = i; j < Math.min(CHUNKS, i + 1000); j++) batch.push(chunkOf(corpus, j));
    const k0 = performance.now();
    await engine.upsertChunks(batch);
    keywordMs += performance.now() - k0;
    if (i % 20_000 === 0 && i) console.log(`  indexed ${i} (${Math.round(i / ((performance.now() - t0) / 1000))}/s)`);
  }
  const indexSeconds = (performance.now() - t0) / 1000;
  const mem = memoryMb();

  const queries = Array.from({ length: QUERIES }, (_, i) => corpus.query(i));
  const make = (mode: SearchMode): IndexQuery[] =>
    queries.map((q) => ({ accountId: ACCOUNT, text: q.text, mode, vector: q.vector, depth: 100, alpha: 0.3, maxDistance: 2 }));

  // Warm up (JIT), then measure.
  for (const mode of ["keyword", "semantic", "hybrid"] as const) await latency(engine, make(mode).slice(0, 30), 1);
  const rows: string[][] = [];
  for (const mode of ["keyword", "semantic", "hybrid"] as const) {
    for (const clients of [1, 8]) {
      const r = await latency(engine, make(mode), clients);
      rows.push([mode, String(clients), r.p50.toFixed(2), r.p99.toFixed(2), r.qps.toFixed(0)]);
    }
  }

  // Recall@10 of the HNSW graph against an exact scan, and keyword result sizes.
  const vectors = engine.vectorIndexOf(ACCOUNT)!;
  let overlap = 0;
  let exactMs = 0;
  for (const q of queries) {
    const approx = vectors.search(q.vector, 10);
    const e0 = performance.now();
    const exact = vectors.exact(q.vector, 10);
    exactMs += performance.now() - e0;
    const truth = new Set(exact.slots);
    overlap += approx.slots.filter((s) => truth.has(s)).length;
  }
  const recall = overlap / (10 * queries.length);

  console.log("\n| mode | clients | p50 ms | p99 ms | queries/s |\n|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(`\n| measure | value |\n|---|---|`);
  console.log(`| chunks | ${CHUNKS} |`);
  console.log(`| index rate (keyword + HNSW, in memory) | ${Math.round(CHUNKS / indexSeconds)} chunks/s (${indexSeconds.toFixed(1)} s) |`);
  console.log(`| HNSW graph in use | ${vectors.usesGraph} (M 16, efConstruction 100, ef 128) |`);
  console.log(`| recall@10, HNSW vs exact | ${recall.toFixed(3)} |`);
  console.log(`| exact scan (for comparison) | ${(exactMs / queries.length).toFixed(1)} ms/query |`);
  console.log(`| memory after indexing (RSS / JS heap / typed arrays+native) | ${mem.rss} / ${mem.heap} / ${mem.external} MB (process at start ${base.rss} MB RSS) |`);

  if (process.env.BENCH_RESTART !== "0") {
    await engine.stop();
    const r = await restartFromMongo(CHUNKS);
    console.log(`| MongoDB write of ${r.n} chunks with vectors (local FerretDB) | ${r.writeSeconds.toFixed(1)} s |`);
    console.log(`| restart: rebuild from MongoDB (local FerretDB) | ${r.restartSeconds.toFixed(1)} s |`);
    console.log(`| memory after restart (RSS) | ${memoryMb().rss} MB |`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
