/**
 * Search engine benchmark, in two parts.
 *
 * First (scifact-speed.ts; BENCH_SCIFACT=0 skips it): BEIR SciFact, the same queries through the embedded
 * engine, the platform's Typesense engine and raw Typesense (its default search over the same documents),
 * p50/p99 at 1 and 8 clients and CPU ms per query of this process and of typesense-server.
 *
 * Then 100,000 synthetic chunks (BENCH_CHUNKS; 0 skips this part) of 1000 characters with 512-d vectors:
 * index rate, p50/p99 latency per mode at 1 and 8 concurrent clients and memory of the embedded
 * engine and, side by side on the same corpus and queries, of Typesense (the test harness's
 * typesense-server, or TYPESENSE_URL's; BENCH_TYPESENSE=0 skips it); then HNSW recall@10 against exact
 * search; filtered searches of the embedded engine (metadata filters keeping 1%, 10% and 30% of the chunks)
 * beside unfiltered ones, and the recall of the filtered scan (10%) and graph search (30%); and restart of the
 * embedded engine: from a snapshot and cold (rebuild from MongoDB), each in a new process, as the search
 * service does it at start (BENCH_RESTART=0 skips both, BENCH_COLD=0 the cold one).
 *
 *   npm run bench:search            (BENCH_CHUNKS=0 for the SciFact part alone, BENCH_CHUNKS=20000 for a quick run)
 */
import { performance } from "node:perf_hooks";
import { fork } from "node:child_process";
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import mongoose from "mongoose";
import { randomBytes } from "node:crypto";
import { EmbeddedEngine } from "../../lib/search/embedded/engine";
import type { SearchFilter } from "../../lib/search/filters";
import type { IndexedChunk, IndexQuery, SearchIndex, SearchMode } from "../../lib/search/port";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { collectionNames } from "../../lib/search/typesense/schema";
import { terms } from "../../lib/search/tokenizer";
import { Client } from "typesense";
import { startTypesense } from "../../test/harness/servers";
import { startLocalMongo } from "../../lib/local-mongo";
import { normalize, vectorToBuffer } from "../../lib/search/vectors";
import { accountStateId, IndexGenerations, SNAPSHOT_MARKER } from "../../services/search/generations";
import { searchModels } from "../../services/search/model";
import { SnapshotKeeper } from "../../services/search/snapshots";
import { syntheticCorpus } from "./synthetic";
import { latency as measure, percentile } from "./latency";
import { sciFactSpeed } from "./scifact-speed";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
/** Queries whose top results are compared before and after a restart, and used for recall. */
const CHECKED = Math.min(QUERIES, 100);
const ACCOUNT = 1;
const DIMENSIONS = 512;
const EPOCH = "bench";
const noop = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {} };

function memoryMb() {
  global.gc?.();
  const m = process.memoryUsage();
  return { rss: Math.round(m.rss / 2 ** 20), heap: Math.round(m.heapUsed / 2 ** 20), external: Math.round(m.external / 2 ** 20) };
}
type Memory = ReturnType<typeof memoryMb>;
const showMemory = (m: Memory) => `${m.rss} / ${m.heap} / ${m.external} MB`;

/** Documents of the corpus carry `group` 0..99: a filter on it keeps 1% (eq), 10% or 30% (lt) of the chunks. */
const groupOf = (document: number) => document % 100;

function chunkOf(corpus: ReturnType<typeof syntheticCorpus>, i: number): IndexedChunk {
  const c = corpus.chunk(i);
  return {
    id: `c${i}`,
    accountId: ACCOUNT,
    sourceId: 1 + (Math.floor(i / 4) % 10),
    documentId: `d${Math.floor(i / 4)}`,
    position: i % 4,
    title: c.title,
    url: `https://bench.example/${Math.floor(i / 4)}`,
    content: c.content,
    vector: c.vector,
    indexedAt: Date.now(),
    metadata: { group: groupOf(Math.floor(i / 4)), lang: "en" },
  };
}

const FILTERS: { name: string; filter: SearchFilter }[] = [
  { name: "1%", filter: { type: "eq", key: "metadata.group", value: 0 } },
  { name: "10%", filter: { type: "lt", key: "metadata.group", value: 10 } },
  // Above sqrt(flat cutoff x vectors) (22,000 at 100k): the graph's filtered search, not a scan.
  { name: "30%", filter: { type: "lt", key: "metadata.group", value: 30 } },
];

function queriesOf(mode: SearchMode, n = QUERIES): IndexQuery[] {
  const corpus = syntheticCorpus();
  return Array.from({ length: n }, (_, i) => {
    const q = corpus.query(i);
    return { accountId: ACCOUNT, text: q.text, mode, vector: q.vector, depth: 100, alpha: 0.3, maxDistance: 2 };
  });
}

function latency(engine: SearchIndex, queries: IndexQuery[], clients: number) {
  return measure((q) => engine.search(q), queries, clients);
}

/** Top-10 ids and scores of the checked queries in every mode: what a restart must reproduce. */
async function fingerprint(engine: EmbeddedEngine): Promise<string[]> {
  const out: string[] = [];
  for (const mode of ["keyword", "semantic", "hybrid"] as const) {
    for (const q of queriesOf(mode, CHECKED)) {
      const r = await engine.search(q);
      out.push(r.hits.slice(0, 10).map((h) => `${h.id}:${h.score}:${h.content.length}`).join(" "));
    }
  }
  return out;
}

/** Slots are numbered in indexing order here: slot i is chunk i, of document i / 4. */
const inTenth = (slot: number) => groupOf(Math.floor(slot / 4)) < 10;
const inThirty = (slot: number) => groupOf(Math.floor(slot / 4)) < 30;

/**
 * Exact top 10 of the checked queries by a Float32 scan over the corpus (regenerated, not kept): over all chunks,
 * and over those the 10% and 30% filters keep.
 */
function exactTruth(): { all: Set<number>[]; tenth: Set<number>[]; thirty: Set<number>[] } {
  const corpus = syntheticCorpus();
  const queries = queriesOf("semantic", CHECKED).map((q) => normalize(q.vector!));
  const best = queries.map(() => [] as { slot: number; d: number }[]);
  const bestTenth = queries.map(() => [] as { slot: number; d: number }[]);
  const bestThirty = queries.map(() => [] as { slot: number; d: number }[]);
  const offer = (list: { slot: number; d: number }[], slot: number, d: number) => {
    if (list.length < 10 || d < list[9]!.d) {
      list.push({ slot, d });
      list.sort((a, b) => a.d - b.d);
      if (list.length > 10) list.pop();
    }
  };
  for (let i = 0; i < CHUNKS; i++) {
    const v = normalize(corpus.chunk(i).vector);
    queries.forEach((q, n) => {
      let dot = 0;
      for (let j = 0; j < DIMENSIONS; j++) dot += q[j]! * v[j]!;
      offer(best[n]!, i, 1 - dot);
      if (inTenth(i)) offer(bestTenth[n]!, i, 1 - dot);
      if (inThirty(i)) offer(bestThirty[n]!, i, 1 - dot);
    });
  }
  const sets = (lists: { slot: number }[][]) => lists.map((list) => new Set(list.map((x) => x.slot)));
  return { all: sets(best), tenth: sets(bestTenth), thirty: sets(bestThirty) };
}

interface ChildReport {
  restoreMs: number;
  wallMs: number;
  fromSnapshot: number;
  rebuilt: number;
  reason?: string;
  baseline: Memory;
  memory: Memory;
  hybrid: { p50: number; p99: number; qps: number };
  keyword: { p50: number; p99: number; qps: number };
  same?: boolean;
}

/** A restart in a new process: the search service's start path (SnapshotKeeper.restore) against MongoDB. */
async function child(kind: string, mongoUrl: string, snapshotDir: string, referenceFile: string) {
  const spawned = Number(process.env.BENCH_SPAWNED_AT);
  const baseline = memoryMb();
  const db = await mongoose.createConnection(mongoUrl).asPromise();
  const models = searchModels(db);
  const engine = new EmbeddedEngine({ dimensions: DIMENSIONS });
  const generations = new IndexGenerations(models.state);
  const keeper = new SnapshotKeeper({ engine, generations, dir: snapshotDir, settleMs: 3_600_000, maxDelayMs: 3_600_000, logger: noop });
  const t0 = performance.now();
  const report = await keeper.restore({ models, index: engine, generations, logger: noop as never });
  const restoreMs = performance.now() - t0;
  const wallMs = Date.now() - spawned;
  const memory = memoryMb();
  await latency(engine, queriesOf("hybrid").slice(0, 30), 1);
  const hybrid = await latency(engine, queriesOf("hybrid"), 1);
  const keyword = await latency(engine, queriesOf("keyword"), 1);
  const reference = JSON.parse(fs.readFileSync(referenceFile, "utf8")) as string[];
  const mine = await fingerprint(engine);
  const out: ChildReport = {
    restoreMs,
    wallMs,
    fromSnapshot: report.fromSnapshot.length,
    rebuilt: report.rebuilt.length,
    reason: report.reasons[ACCOUNT],
    baseline,
    memory,
    hybrid,
    keyword,
    // A cold rebuild builds another HNSW graph (insertion order and levels differ), so only a snapshot restart must match.
    same: kind === "snapshot" ? JSON.stringify(mine) === JSON.stringify(reference) : undefined,
  };
  await engine.stop();
  await db.close();
  process.send!(out);
}

function runChild(kind: "snapshot" | "cold", mongoUrl: string, snapshotDir: string, referenceFile: string): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const p = fork(__filename, ["child", kind, mongoUrl, snapshotDir, referenceFile], {
      execArgv: ["--expose-gc"],
      env: { ...process.env, BENCH_SPAWNED_AT: String(Date.now()) },
    });
    let report: ChildReport | undefined;
    p.on("message", (m) => (report = m as ChildReport));
    p.on("error", reject);
    p.on("exit", (code) => (report ? resolve(report) : reject(new Error(`${kind} restart exited with ${code}`))));
  });
}

type Latencies = Record<`${SearchMode} ${number}`, { p50: number; p99: number; qps: number }>;
const MODES = ["keyword", "semantic", "hybrid"] as const;
const CLIENTS = [1, 8];

/** p50/p99 per mode at 1 and 8 clients, after a warm-up. */
async function latencies(engine: SearchIndex): Promise<Latencies> {
  for (const mode of MODES) await latency(engine, queriesOf(mode).slice(0, 30), 1);
  const out = {} as Latencies;
  for (const mode of MODES) for (const clients of CLIENTS) out[`${mode} ${clients}`] = await latency(engine, queriesOf(mode), clients);
  return out;
}

type Filtered = Record<`${SearchMode} ${string}`, { p50: number; p99: number; hits: number }>;

/**
 * p50/p99 per mode (1 client), unfiltered and under each filter, the variants of each query run back to back so
 * the machine's load weighs on all alike; with the mean hits per query (a filter must not cost results: depth
 * 100 when 100 match).
 */
async function filteredLatencies(engine: SearchIndex): Promise<Filtered> {
  const out = {} as Filtered;
  const variants = [{ name: "none", filter: undefined }, ...FILTERS];
  for (const mode of MODES) {
    const queries = queriesOf(mode);
    const times = variants.map(() => [] as number[]);
    const hits = variants.map(() => 0);
    for (const [n, q] of queries.entries()) {
      for (const [v, { filter }] of variants.entries()) {
        const t0 = performance.now();
        const res = await engine.search({ ...q, filter });
        // The first 30 queries warm up.
        if (n < 30) continue;
        times[v]!.push(performance.now() - t0);
        hits[v]! += res.hits.length;
      }
    }
    variants.forEach(({ name }, v) => {
      const sorted = times[v]!.sort((a, b) => a - b);
      out[`${mode} ${name}`] = { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), hits: hits[v]! / sorted.length };
    });
  }
  return out;
}

/** Resident memory of a process in MiB (Linux), or undefined. */
function rssOf(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  const line = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Math.round(Number(line[1]) / 1024) : undefined;
}

interface TypesenseReport {
  version: string;
  indexSeconds: number;
  rssMb?: number;
  latencies: Latencies;
  /** Typesense ranking by itself (its own text match, no BM25), for scale: keyword alone and with vectors. */
  raw: Record<"keyword" | "hybrid", { p50: number; p99: number; qps: number }>;
}

/**
 * Typesense's own query time on the same collections, 1 client: the query's terms by its text match
 * (depth hits with their text), alone and with the k nearest vectors in the same multi_search.
 */
async function rawTypesense(server: { url: string; apiKey: string }, collection: string): Promise<TypesenseReport["raw"]> {
  const client = new Client({ nodes: [{ url: server.url }] as never, apiKey: server.apiKey, connectionTimeoutSeconds: 30 });
  const names = collectionNames(collection);
  const run = (withVectors: boolean): SearchIndex => ({
    search: async (q: IndexQuery) => {
      const searches: Record<string, unknown>[] = [
        { collection: names.chunks, q: terms(q.text).join(" "), query_by: "title_terms,content_terms", filter_by: `account_id:=${q.accountId}`, prefix: "false", num_typos: 0, per_page: q.depth },
      ];
      if (withVectors) {
        searches.push({ collection: names.vectors, q: "*", filter_by: `account_id:=${q.accountId}`, vector_query: `embedding:([${Array.from(q.vector!).join(",")}], k:${q.depth})`, per_page: q.depth, include_fields: "id" });
      }
      await client.multiSearch.perform({ searches } as never);
      return { hits: [], modeUsed: "keyword" };
    },
  }) as unknown as SearchIndex;
  await latency(run(true), queriesOf("hybrid").slice(0, 30), 1);
  return { keyword: await latency(run(false), queriesOf("keyword"), 1), hybrid: await latency(run(true), queriesOf("hybrid"), 1) };
}

/** The same corpus and queries through the Typesense engine (one collection of its own, dropped afterwards). */
async function typesenseColumn(corpus: ReturnType<typeof syntheticCorpus>): Promise<TypesenseReport> {
  const server = await startTypesense();
  const collection = `bench_${randomBytes(4).toString("hex")}`;
  const engine = new TypesenseEngine({ url: server.url, apiKey: server.apiKey, collection, dimensions: DIMENSIONS });
  try {
    await engine.start();
    const t0 = performance.now();
    for (let i = 0; i < CHUNKS; i += 1000) {
      const batch: IndexedChunk[] = [];
      for (let j = i; j < Math.min(CHUNKS, i + 1000); j++) batch.push(chunkOf(corpus, j));
      await engine.upsertChunks(batch);
      if (i % 20_000 === 0 && i) console.log(`  typesense: imported ${i} (${Math.round(i / ((performance.now() - t0) / 1000))}/s)`);
    }
    const indexSeconds = (performance.now() - t0) / 1000;
    const rssMb = rssOf(server.pid);
    return { version: server.kind, indexSeconds, rssMb, latencies: await latencies(engine), raw: await rawTypesense(server, collection) };
  } finally {
    await engine.dropCollection();
    await server.stop();
  }
}

async function main() {
  if (process.env.BENCH_SCIFACT !== "0") await sciFactSpeed();
  if (!CHUNKS) return;
  const corpus = syntheticCorpus();
  const engine = new EmbeddedEngine({ dimensions: DIMENSIONS });
  const base = memoryMb();
  console.log(`search engine benchmark: ${CHUNKS} chunks x 1000 chars, ${DIMENSIONS}-d vectors, ${QUERIES} queries, node ${process.version}, ${os.cpus().length} cores`);

  // Index: keyword + vectors (the HNSW graph takes over at 5,000 vectors).
  const t0 = performance.now();
  for (let i = 0; i < CHUNKS; i += 1000) {
    const batch: IndexedChunk[] = [];
    for (let j = i; j < Math.min(CHUNKS, i + 1000); j++) batch.push(chunkOf(corpus, j));
    await engine.upsertChunks(batch);
    if (i % 20_000 === 0 && i) console.log(`  indexed ${i} (${Math.round(i / ((performance.now() - t0) / 1000))}/s)`);
  }
  const indexSeconds = (performance.now() - t0) / 1000;
  const memIndexed = memoryMb();

  const embedded = await latencies(engine);
  const filtered = await filteredLatencies(engine);
  const typesense = process.env.BENCH_TYPESENSE === "0" ? undefined : await typesenseColumn(corpus);

  // Recall@10 of the HNSW graph and of the int8 scan (the path of selective source filters) against exact search.
  const vectors = engine.vectorIndexOf(ACCOUNT)!;
  const truth = exactTruth();
  let graphHits = 0;
  let scanHits = 0;
  let scanMs = 0;
  let filteredHits = 0;
  let graphFilteredHits = 0;
  queriesOf("semantic", CHECKED).forEach((q, n) => {
    filteredHits += vectors.search(q.vector!, 10, 2, inTenth).slots.filter((s) => truth.tenth[n]!.has(s)).length;
    graphFilteredHits += vectors.search(q.vector!, 10, 2, inThirty).slots.filter((s) => truth.thirty[n]!.has(s)).length;
    graphHits += vectors.search(q.vector!, 10).slots.filter((s) => truth.all[n]!.has(s)).length;
    const s0 = performance.now();
    const scan = vectors.exact(q.vector!, 10);
    scanMs += performance.now() - s0;
    scanHits += scan.slots.filter((s) => truth.all[n]!.has(s)).length;
  });

  const cells = (l: Latencies[keyof Latencies] | undefined) => (l ? `${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} | ${l.qps.toFixed(0)}` : "- | -");
  console.log(`\n| mode | clients | embedded p50 / p99 ms | embedded queries/s | ${typesense?.version ?? "Typesense"} p50 / p99 ms | Typesense queries/s |`);
  console.log("|---|---|---|---|---|---|");
  for (const mode of MODES) for (const clients of CLIENTS) console.log(`| ${mode} | ${clients} | ${cells(embedded[`${mode} ${clients}`])} | ${cells(typesense?.latencies[`${mode} ${clients}`])} |`);
  console.log(`\n| mode | filter (share of chunks) | embedded p50 / p99 ms, 1 client | p99 / unfiltered p99 | hits per query (depth 100) |`);
  console.log("|---|---|---|---|---|");
  for (const mode of MODES) {
    const none = filtered[`${mode} none`];
    for (const f of [undefined, ...FILTERS]) {
      const l = filtered[`${mode} ${f?.name ?? "none"}`];
      console.log(`| ${mode} | ${f ? `metadata ${f.name}` : "none"} | ${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} | ${(l.p99 / none.p99).toFixed(2)} | ${l.hits.toFixed(1)} |`);
    }
  }
  if (typesense) {
    console.log(`\n| measure | embedded | ${typesense.version} |\n|---|---|---|`);
    console.log(`| index (${CHUNKS} chunks with vectors) | ${indexSeconds.toFixed(1)} s | ${typesense.indexSeconds.toFixed(1)} s (import in batches of 1000) |`);
    console.log(`| memory after indexing | ${memIndexed.rss} MB RSS (whole bench process) | ${typesense.rssMb ?? "?"} MB RSS (typesense-server) |`);
    const raw = typesense.raw;
    console.log(`\nTypesense's own query time, 1 client (its text match, depth hits with text; no BM25): keyword p50 / p99 ${raw.keyword.p50.toFixed(2)} / ${raw.keyword.p99.toFixed(2)} ms, keyword + vectors in one multi_search ${raw.hybrid.p50.toFixed(2)} / ${raw.hybrid.p99.toFixed(2)} ms`);
  }
  console.log(`\n| measure | value |\n|---|---|`);
  console.log(`| chunks | ${CHUNKS} |`);
  console.log(`| index rate (keyword + HNSW, in memory) | ${Math.round(CHUNKS / indexSeconds)} chunks/s (${indexSeconds.toFixed(1)} s) |`);
  console.log(`| HNSW graph in use | ${vectors.usesGraph} (M 16, efConstruction 100, ef 128) |`);
  console.log(`| recall@10, HNSW vs exact | ${(graphHits / (10 * CHECKED)).toFixed(3)} |`);
  console.log(`| recall@10 under the 10% filter (int8 scan) vs exact over the filtered chunks | ${(filteredHits / (10 * CHECKED)).toFixed(3)} |`);
  console.log(`| recall@10, HNSW under the 30% filter vs exact over the filtered chunks | ${(graphFilteredHits / (10 * CHECKED)).toFixed(3)} |`);
  console.log(`| recall@10, int8 scan vs exact (filtered path) | ${(scanHits / (10 * CHECKED)).toFixed(3)}, ${(scanMs / CHECKED).toFixed(1)} ms/query over all ${CHUNKS} |`);
  console.log(`| memory after indexing, before any snapshot (RSS / JS heap / external) | ${showMemory(memIndexed)} (process at start ${base.rss} MB RSS) |`);

  if (process.env.BENCH_RESTART === "0") return;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "bench-search-"));
  const local = await startLocalMongo({ dataDir: path.join(work, "mongo") });
  const mongoUrl = `${local.url}/bench`;
  const db = await mongoose.createConnection(mongoUrl).asPromise();
  try {
    // MongoDB holds what the service would have written: the chunks, and the account's generation.
    const models = searchModels(db);
    const w0 = performance.now();
    for (let i = 0; i < CHUNKS; i += 1000) {
      const docs = [];
      for (let j = i; j < Math.min(CHUNKS, i + 1000); j++) {
        const c = chunkOf(corpus, j);
        docs.push({
          _id: c.id, account_id: c.accountId, source_id: c.sourceId, document_id: c.documentId, position: c.position,
          title: c.title, url: c.url, content: c.content, embed_key: c.id, vector: vectorToBuffer(c.vector!), indexed_at: new Date(),
        });
      }
      await models.chunks.collection.insertMany(docs as never[], { ordered: false });
    }
    const writeSeconds = (performance.now() - w0) / 1000;
    await models.state.create({ _id: SNAPSHOT_MARKER, epoch: EPOCH });
    await models.state.create({ _id: accountStateId(ACCOUNT), account_id: ACCOUNT, generation: 1 });

    const snapshotDir = path.join(work, "snapshots");
    const s0 = performance.now();
    const written = await engine.writeSnapshot(ACCOUNT, path.join(snapshotDir, String(ACCOUNT)), { epoch: EPOCH, generation: 1 });
    const snapshotSeconds = (performance.now() - s0) / 1000;
    const memSnapshotted = memoryMb();
    const afterSnapshot = await latency(engine, queriesOf("hybrid"), 1);
    const referenceFile = path.join(work, "reference.json");
    fs.writeFileSync(referenceFile, JSON.stringify(await fingerprint(engine)));
    await engine.stop();

    const warm = await runChild("snapshot", mongoUrl, snapshotDir, referenceFile);
    const cold = process.env.BENCH_COLD === "0" ? undefined : await runChild("cold", mongoUrl, path.join(work, "no-snapshots"), referenceFile);

    console.log(`| snapshot write (graph + postings + chunk table + text, fsync'd) | ${snapshotSeconds.toFixed(1)} s, ${(written.bytes / 2 ** 20).toFixed(0)} MB on disk |`);
    console.log(`| memory after the snapshot (text now read from it) | ${showMemory(memSnapshotted)}; hybrid p50 / p99 ${afterSnapshot.p50.toFixed(2)} / ${afterSnapshot.p99.toFixed(2)} ms |`);
    console.log(`| MongoDB write of ${CHUNKS} chunks with vectors (local FerretDB) | ${writeSeconds.toFixed(1)} s |`);
    console.log(`| **restart from snapshot** (new process; generation check in MongoDB, checksums, load) | **${(warm.restoreMs / 1000).toFixed(1)} s** (process spawn to ready ${(warm.wallMs / 1000).toFixed(1)} s); ${warm.fromSnapshot} from snapshot, ${warm.rebuilt} rebuilt |`);
    console.log(`| results after restart identical (top 10 ids, scores, text of ${3 * CHECKED} queries) | ${warm.same ? "yes" : "NO"} |`);
    console.log(`| **memory after restart from snapshot** (RSS / JS heap / external) | **${showMemory(warm.memory)}** (process before loading ${warm.baseline.rss} MB RSS) |`);
    console.log(`| after restart: hybrid p50 / p99, keyword p50 / p99 (1 client) | ${warm.hybrid.p50.toFixed(2)} / ${warm.hybrid.p99.toFixed(2)} ms, ${warm.keyword.p50.toFixed(2)} / ${warm.keyword.p99.toFixed(2)} ms |`);
    if (cold) {
      console.log(`| restart without a snapshot: rebuild from MongoDB (local FerretDB) | ${(cold.restoreMs / 1000).toFixed(1)} s (${cold.reason ?? "rebuilt"}) |`);
      console.log(`| memory after the cold rebuild, before its first snapshot | ${showMemory(cold.memory)} |`);
    }
  } finally {
    await db.close();
    await local.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === "child") {
  const [, , , kind, mongoUrl, snapshotDir, referenceFile] = process.argv;
  child(kind!, mongoUrl!, snapshotDir!, referenceFile!).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
