import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startLocalMongo } from "../lib/local-mongo";
import { databaseUrl, freePort, startMongo, startNats, type RunningServer } from "../test/harness/servers";
import { apiClient, signup, type Api } from "../test/harness/http";
import { runBench, type Lifecycle } from "./lifecycle";
import { startNode, stopAll, waitForOk, type BenchProcess } from "./processes";
import { machine, writeResults } from "./report";
import { startBenchSite, type BenchSite } from "./knowledge/site";
import { cpuSnapshot, machineTicks } from "./knowledge/procs";
import { listEnv, positiveIntEnv } from "../lib/env";

/**
 * Knowledge-loading bench (the knowledge-loading issue's target): pages per second per loader replica for a
 * local sitemap site (fetch + parse + chunk + store, embeddings off), with one and with two loader replicas,
 * the time to resume after a loader is killed, and, separately, the local embedding model's rate.
 * Everything runs on loopback: nats-server, the MongoDB-compatible server, a generated site, and the
 * platform as `node dist/server.js` processes over NATS.
 *
 * Settings (environment): BENCH_PAGES (2000), BENCH_SOURCES (4), BENCH_LOADERS ("1,2"), BENCH_ONLY
 * ("throughput,resume,embedding"), BENCH_LEASE_SECONDS (10), BENCH_EMBED_CHUNKS (200), BENCH_LOAD_TIMEOUT
 * (seconds per scenario), BENCH_MONGO_BINARY (another build of the local MongoDB-compatible server),
 * BENCH_CPU_PROF (a directory for the platform processes' V8 CPU profiles). Loader knobs such as
 * LOAD_BATCH_SIZE and LOAD_PER_HOST_CONCURRENCY pass through to the platform processes and are reported.
 */

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "knowledge.json");

/** Pages of the site loaded in each throughput scenario and in the resume scenario. */
const PAGES = positiveIntEnv(process.env, "BENCH_PAGES", 2000);
/**
 * One source is one load job, which one loader runs at a time; the pages are split over this many sources so
 * that two replicas have work to share. The same split is loaded with one and with two replicas.
 */
const SOURCES = positiveIntEnv(process.env, "BENCH_SOURCES", 4);
const LOADER_COUNTS = listEnv(process.env, "BENCH_LOADERS", ["1", "2"]).map(Number);
const SCENARIOS = new Set(listEnv(process.env, "BENCH_ONLY", ["throughput", "resume", "embedding"]));
/** Lease of the resume scenario's loaders: a killed loader's job is taken over once it expires. */
const LEASE_SECONDS = positiveIntEnv(process.env, "BENCH_LEASE_SECONDS", 10);
/** The loader is killed once this share of the pages is done. */
const KILL_AT = 0.3;
/** Chunks the embedding scenario produces (default chunk size: 1000 characters). */
const EMBED_CHUNKS = positiveIntEnv(process.env, "BENCH_EMBED_CHUNKS", 200);
/** Used when no throughput scenario ran to measure it. */
const DEFAULT_CHUNKS_PER_PAGE = 10;

const POLL_MS = 250;
/** Faster polling while waiting for the kill point, so the kill lands close to it. */
const KILL_POLL_MS = 100;
const STARTUP_TIMEOUT_MS = 90_000;
const RETRY_MS = 200;
/** One scenario's loading may take this long before it is reported as timed out (at least 4 pages/s). */
const LOAD_TIMEOUT_MS = positiveIntEnv(process.env, "BENCH_LOAD_TIMEOUT", Math.max(300, Math.ceil(PAGES / 4))) * 1000;
const SCENARIO_COUNT = (SCENARIOS.has("throughput") ? LOADER_COUNTS.length : 0) + (SCENARIOS.has("resume") ? 1 : 0) + (SCENARIOS.has("embedding") ? 1 : 0);
/** Hard bound on the whole run once NATS and the database are up. */
const RUN_BUDGET_MS = SCENARIO_COUNT * (2 * STARTUP_TIMEOUT_MS + LOAD_TIMEOUT_MS) + 120_000;

/** The issue's target: pages per second per loader replica, and how close two replicas must come to twice one. */
const TARGET = { pagesPerSecondPerLoader: 100, minScaling: 1.8 } as const;
/** Loader settings the run inherits from the environment (the knobs worth trying), reported with the results. */
const LOADER_KNOBS = ["LOAD_BATCH_SIZE", "LOAD_PER_HOST_CONCURRENCY", "LOAD_POLL_MS", "LOAD_WINDOW_SECONDS", "SEARCH_CHUNK_SIZE", "EMBEDDING_BATCH_SIZE"];

const RUN_ID = randomBytes(3).toString("hex");
const terminal = (status: string) => ["loaded", "partial", "failed"].includes(status);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => Number(n.toFixed(digits));

interface SourceView {
  id: number;
  loading_status: string;
  loading_urls_done: number;
  loading_urls_total: number | null;
  document_count: number;
  loading_error: string | null;
}

interface Row {
  scenario: string;
  loaders: number;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  /** From the first poll that saw progress to the end: excludes sitemap listing and the first claim. */
  steadyPagesPerSecond: number | null;
  pagesPerSecondPerLoader: number | null;
  target: string;
}

// ---------------------------------------------------------------- the platform of one scenario

interface Platform {
  baseUrl: string;
  api: Api;
  token: string;
  main: BenchProcess;
  loaders: BenchProcess[];
  children: BenchProcess[];
  /** Starts one more loader and resolves once its health probe answers. */
  addLoader(): Promise<BenchProcess>;
  /** Which child process is which, for CPU accounting. */
  names: Map<number, string>;
}

/** Starts the API process (gateway, users, api-keys, knowledge, search) and `loaders` loader processes, signs up. */
async function startPlatform(
  scenario: string,
  infra: { nats: string; mongo: string },
  opts: { loaders: number; embedding: "none" | "local"; extraEnv?: Record<string, string> },
): Promise<Platform> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    NODE_ENV: "production",
    JWT_SECRET: randomBytes(32).toString("hex"),
    LOG_LEVEL: "warn",
    TRANSPORTER: infra.nats,
    NAMESPACE: `bench-knowledge-${RUN_ID}-${scenario}`,
    MONGO_URL: databaseUrl(infra.mongo, `bench_knowledge_${RUN_ID}_${scenario.replace(/\W/g, "_")}`),
    ALLOW_LOOPBACK_TARGETS: "true",
    EMBEDDING_PROVIDER: opts.embedding,
    // The embedded engine (no Typesense on this machine): chunks in MongoDB plus the in-process index.
    TYPESENSE_URL: "",
    SEARCH_ENGINE: "embedded",
    // Throwaway databases: no snapshots left behind in the work tree.
    SEARCH_SNAPSHOTS: "off",
    METRICS_PORT: "0",
    // BENCH_CPU_PROF=<dir>: every platform process writes a V8 CPU profile there when it stops (for investigating a miss).
    ...(process.env.BENCH_CPU_PROF ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`.trim() } : {}),
    ...opts.extraEnv,
  };
  const names = new Map<number, string>();
  const children: BenchProcess[] = [];
  const main = startNode(`${scenario} api`, SERVER_SCRIPT, { ...env, PORT: String(port), HEALTH_PORT: "0", SERVICES: "gateway,users,api-keys,knowledge,search" });
  children.push(main);
  names.set(main.pid, "api (gateway, knowledge, search)");
  const loaders: BenchProcess[] = [];
  const addLoader = async () => {
    const healthPort = await freePort();
    const n = loaders.length + 1;
    const loader = startNode(`${scenario} loader ${n}`, SERVER_SCRIPT, {
      ...env,
      HEALTH_PORT: String(healthPort),
      SERVICES: "knowledge-loader",
    });
    loaders.push(loader);
    children.push(loader);
    names.set(loader.pid, `loader ${n}`);
    await waitForOk(`http://127.0.0.1:${healthPort}/health`, [loader, main], STARTUP_TIMEOUT_MS);
    return loader;
  };
  console.error(`${scenario}: starting the API process and ${opts.loaders} loader(s) on ${baseUrl}`);
  await waitForOk(`${baseUrl}/health`, [main], STARTUP_TIMEOUT_MS);
  const api = apiClient(baseUrl);
  const token = await signupWhenReady(api, children);
  const auth = { authorization: `Bearer ${token}` };
  await waitForOk(`${baseUrl}/api/v1/knowledge`, [main], STARTUP_TIMEOUT_MS, auth);
  await waitForOk(`${baseUrl}/api/v1/knowledge/documents/stats`, [main], STARTUP_TIMEOUT_MS, auth);
  for (let i = 0; i < opts.loaders; i++) await addLoader();
  return { baseUrl, api, token, main, loaders, children, addLoader, names };
}

/** Signs up a fresh account, retrying while the gateway has not yet discovered the users service. */
async function signupWhenReady(api: Api, procs: BenchProcess[]): Promise<string> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      return (await Promise.race([signup(api, "bench"), ...procs.map((p) => p.exited)])).token;
    } catch (err) {
      if (procs.some((p) => p.done) || Date.now() >= deadline) throw err;
    }
    await sleep(RETRY_MS);
  }
}

async function stopPlatform(platform: Platform | undefined) {
  if (platform) await Promise.all(platform.children.map((c) => c.stop()));
}

async function call<T = any>(platform: Platform, method: string, route: string, body?: unknown): Promise<T> {
  const res = await Promise.race([platform.api(method, `/api/v1${route}`, { token: platform.token, body }), platform.main.exited]);
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

async function createSource(platform: Platform, name: string, sitemap: string): Promise<number> {
  const created = await call<SourceView>(platform, "POST", "/knowledge", { name, data_type: "sitemap", paths: [sitemap] });
  return created.id;
}

// ---------------------------------------------------------------- polling

interface Timeline {
  /** When the sources were created (ms, bench clock). */
  startedAt: number;
  /** First poll at which any source showed progress, and the pages done by then. */
  firstProgressAt: number | null;
  doneAtFirstProgress: number;
  /** Last source seen in a final state (or the timeout). */
  endedAt: number;
  timedOut: boolean;
  sources: (SourceView & { endedAt: number | null; firstProgressAt: number | null })[];
}

/** Polls the sources every POLL_MS until all are in a final state (or LOAD_TIMEOUT_MS passes). */
async function pollUntilLoaded(platform: Platform, ids: number[], startedAt: number): Promise<Timeline> {
  const deadline = startedAt + LOAD_TIMEOUT_MS;
  const state = new Map<number, Timeline["sources"][number]>();
  let firstProgressAt: number | null = null;
  let doneAtFirstProgress = 0;
  for (;;) {
    const open = ids.filter((id) => !state.has(id) || state.get(id)!.endedAt === null);
    const views = await Promise.all(open.map((id) => call<SourceView>(platform, "GET", `/knowledge/${id}`)));
    const now = Date.now();
    for (const view of views) {
      const prev = state.get(view.id);
      const firstProgress = prev?.firstProgressAt ?? (view.loading_urls_done > 0 ? now : null);
      state.set(view.id, { ...view, firstProgressAt: firstProgress, endedAt: terminal(view.loading_status) ? now : null });
    }
    const all = [...state.values()];
    if (firstProgressAt === null && all.some((s) => s.loading_urls_done > 0)) {
      firstProgressAt = now;
      doneAtFirstProgress = all.reduce((sum, s) => sum + s.loading_urls_done, 0);
    }
    const finished = all.length === ids.length && all.every((s) => s.endedAt !== null);
    if (finished || now >= deadline) {
      return {
        startedAt,
        firstProgressAt,
        doneAtFirstProgress,
        endedAt: finished ? Math.max(...all.map((s) => s.endedAt!)) : now,
        timedOut: !finished,
        sources: ids.map((id) => state.get(id)!),
      };
    }
    await Promise.race([sleep(POLL_MS), ...platform.children.filter((c) => !c.done).map((c) => c.exited)]);
  }
}

/** Every document of a source, paged through the API: URLs must be distinct and number `expected`. */
async function checkDocuments(platform: Platform, id: number, expected: number) {
  const urls: string[] = [];
  let total = 0;
  for (let offset = 0; ; offset += 200) {
    const page = await call<{ documents: { url: string }[]; total: number }>(platform, "GET", `/knowledge/${id}/documents?limit=200&offset=${offset}`);
    total = page.total;
    urls.push(...page.documents.map((d) => d.url));
    if (page.documents.length < 200 || urls.length >= total) break;
  }
  const distinct = new Set(urls).size;
  return { total, listed: urls.length, distinct, ok: total === expected && distinct === expected && urls.length === expected };
}

// ---------------------------------------------------------------- CPU accounting

interface CpuUse {
  /** CPU seconds per process during the measured interval. */
  seconds: Record<string, number>;
  /** Share of the machine's cores busy during the interval (everything on the machine, not only the bench). */
  machineBusy: number | null;
}

function cpuStart(platform: Platform) {
  return { procs: cpuSnapshot(platform.names), machine: machineTicks() };
}

function cpuEnd(platform: Platform, start: ReturnType<typeof cpuStart>): CpuUse {
  const end = cpuSnapshot(platform.names);
  const machineNow = machineTicks();
  const seconds: Record<string, number> = {};
  for (const [name, value] of end) seconds[name] = round(value - (start.procs.get(name) ?? 0), 1);
  const machineBusy =
    start.machine && machineNow ? round((machineNow.busy - start.machine.busy) / Math.max(1, machineNow.total - start.machine.total), 2) : null;
  return { seconds, machineBusy };
}

function describeCpu(cpu: CpuUse, wallSeconds: number): string {
  const parts = Object.entries(cpu.seconds)
    .filter(([, s]) => s >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${s.toFixed(1)} s (${Math.round((100 * s) / wallSeconds)}%)`);
  return `CPU over ${wallSeconds.toFixed(1)} s: ${parts.join(", ")}; machine busy ${cpu.machineBusy === null ? "?" : `${Math.round(cpu.machineBusy * 100)}%`} of ${os.availableParallelism()} cores`;
}

// ---------------------------------------------------------------- scenarios

/** Splits `total` pages into `parts` sources whose sizes differ by at most one. */
function split(total: number, parts: number): number[] {
  const n = Math.min(parts, total);
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));
}

interface ThroughputResult {
  loaders: number;
  sources: number[];
  timeline: Timeline;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  steadyPagesPerSecond: number | null;
  perSource: { id: number; pages: number; status: string; seconds: number | null; pagesPerSecond: number | null }[];
  /** Chunks and documents in the index (documents indexed even where the source's count was not yet updated). */
  chunks: number;
  indexedDocuments: number;
  /** Sum of the sources' document_count. */
  documents: number;
  cpu: CpuUse;
  ok: boolean;
  problems: string[];
}

async function throughput(infra: { nats: string; mongo: string }, site: BenchSite, loaders: number): Promise<ThroughputResult> {
  const name = `throughput-${loaders}`;
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders, embedding: "none" });
    const sizes = split(PAGES, SOURCES);
    const cpu0 = cpuStart(platform);
    const startedAt = Date.now();
    const ids = await Promise.all(sizes.map((pages, i) => createSource(platform!, `bench ${name} source ${i + 1}`, site.sitemap(`t${loaders}s${i + 1}`, pages))));
    console.error(`${name}: ${ids.length} sources of ${sizes.join("/")} pages created; polling every ${POLL_MS} ms`);
    const timeline = await pollUntilLoaded(platform, ids, startedAt);
    const cpu = cpuEnd(platform, cpu0);
    const pages = timeline.sources.reduce((sum, s) => sum + s.loading_urls_done, 0);
    const documents = timeline.sources.reduce((sum, s) => sum + s.document_count, 0);
    const seconds = (timeline.endedAt - startedAt) / 1000;
    const steadySeconds = timeline.firstProgressAt === null ? 0 : (timeline.endedAt - timeline.firstProgressAt) / 1000;
    const stats = await call<{ total_chunks: number; total_documents: number }>(platform, "GET", "/knowledge/documents/stats");
    const indexed = { chunks: stats.total_chunks, documents: stats.total_documents };
    const problems: string[] = [];
    if (timeline.timedOut) problems.push(`timed out after ${LOAD_TIMEOUT_MS / 1000} s`);
    timeline.sources.forEach((s, i) => {
      if (s.loading_status !== "loaded" || s.document_count !== sizes[i]) {
        problems.push(`source ${s.id}: ${s.loading_status}, ${s.document_count}/${sizes[i]} documents${s.loading_error ? ` (${s.loading_error})` : ""}`);
      }
    });
    const result: ThroughputResult = {
      loaders,
      sources: sizes,
      timeline,
      pages,
      seconds: round(seconds, 2),
      pagesPerSecond: round(pages / seconds),
      steadyPagesPerSecond: steadySeconds > 0 ? round((pages - timeline.doneAtFirstProgress) / steadySeconds) : null,
      perSource: timeline.sources.map((s) => {
        const secs = s.endedAt === null ? null : (s.endedAt - startedAt) / 1000;
        return { id: s.id, pages: s.loading_urls_done, status: s.loading_status, seconds: secs === null ? null : round(secs, 2), pagesPerSecond: secs ? round(s.loading_urls_done / secs) : null };
      }),
      chunks: indexed.chunks,
      indexedDocuments: indexed.documents,
      documents,
      cpu,
      ok: problems.length === 0,
      problems,
    };
    console.error(`${name}: ${pages} pages in ${seconds.toFixed(1)} s = ${result.pagesPerSecond} pages/s (${result.steadyPagesPerSecond ?? "?"} after the first batch); ${stats.total_chunks} chunks`);
    console.error(`${name}: ${describeCpu(cpu, seconds)}`);
    return result;
  } finally {
    await stopPlatform(platform);
  }
}

interface ResumeResult {
  pages: number;
  leaseSeconds: number;
  killedAtDone: number;
  persistedAtKill: number;
  killedAfterSeconds: number;
  /** Kill → the replacement loader's health probe answers (process start, NATS, waiting for search). */
  replacementReadySeconds: number;
  /** Kill → loading_urls_done moves past what was saved when the loader died. */
  resumeSeconds: number;
  totalSeconds: number;
  pagesPerSecond: number;
  final: SourceView;
  documents: Awaited<ReturnType<typeof checkDocuments>>;
  pagesRefetched: number;
  ok: boolean;
}

async function resume(infra: { nats: string; mongo: string }, site: BenchSite): Promise<ResumeResult> {
  const name = "resume";
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders: 1, embedding: "none", extraEnv: { LOAD_LEASE_SECONDS: String(LEASE_SECONDS) } });
    const refetchedBefore = site.pagesRefetched;
    const startedAt = Date.now();
    const id = await createSource(platform, "bench resume", site.sitemap("resume", PAGES));
    const killAt = Math.ceil(PAGES * KILL_AT);
    const deadline = startedAt + LOAD_TIMEOUT_MS;
    let view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
    while (view.loading_urls_done < killAt) {
      if (Date.now() > deadline || terminal(view.loading_status)) {
        throw new Error(`never reached ${killAt} pages done: ${view.loading_status} at ${view.loading_urls_done} pages${view.loading_error ? ` (${view.loading_error})` : ""}`);
      }
      await sleep(KILL_POLL_MS);
      view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
    }
    const doomed = platform.loaders[0]!;
    doomed.kill("SIGKILL");
    const killedAt = Date.now();
    const killedAtDone = view.loading_urls_done;
    console.error(`resume: SIGKILL to loader 1 at ${killedAtDone}/${PAGES} pages done, ${((killedAt - startedAt) / 1000).toFixed(1)} s in; starting a replacement`);
    await doomed.exited.catch(() => undefined);
    // What the dead loader saved last: progress can only move again once another loader holds the job.
    const persistedAtKill = (await call<SourceView>(platform, "GET", `/knowledge/${id}`)).loading_urls_done;
    let replacementReadyAt = 0;
    const replacement = platform.addLoader().then(() => void (replacementReadyAt = Date.now()));
    let resumedAt = 0;
    for (;;) {
      const now = Date.now();
      view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
      if (view.loading_urls_done > persistedAtKill || terminal(view.loading_status)) {
        resumedAt = now;
        break;
      }
      if (now > deadline) throw new Error(`resume: no progress after the kill in ${(now - killedAt) / 1000} s`);
      await Promise.race([sleep(KILL_POLL_MS), platform.main.exited]);
    }
    await replacement;
    console.error(`resume: progress again ${((resumedAt - killedAt) / 1000).toFixed(1)} s after the kill (lease ${LEASE_SECONDS} s)`);
    const timeline = await pollUntilLoaded(platform, [id], startedAt);
    const final = timeline.sources[0]!;
    const documents = await checkDocuments(platform, id, PAGES);
    const totalSeconds = (timeline.endedAt - startedAt) / 1000;
    const ok = !timeline.timedOut && final.loading_status === "loaded" && final.document_count === PAGES && final.loading_urls_done === PAGES && documents.ok;
    return {
      pages: PAGES,
      leaseSeconds: LEASE_SECONDS,
      killedAtDone,
      persistedAtKill,
      killedAfterSeconds: round((killedAt - startedAt) / 1000, 2),
      replacementReadySeconds: round((replacementReadyAt - killedAt) / 1000, 2),
      resumeSeconds: round((resumedAt - killedAt) / 1000, 2),
      totalSeconds: round(totalSeconds, 2),
      pagesPerSecond: round(final.loading_urls_done / totalSeconds),
      final,
      documents,
      pagesRefetched: site.pagesRefetched - refetchedBefore,
      ok,
    };
  } finally {
    await stopPlatform(platform);
  }
}

interface EmbeddingResult {
  pages: number;
  chunks: number;
  embedded: number;
  /** The first semantic query, which waits for the model to load. */
  modelWarmUpSeconds: number;
  /** Source created → loaded (indexing continues while embedding runs in the search process). */
  loadSeconds: number;
  /** First chunks seen in the index → every chunk has its vector. */
  embeddingSeconds: number;
  chunksPerSecond: number;
  cpu: CpuUse;
  ok: boolean;
}

async function embedding(infra: { nats: string; mongo: string }, site: BenchSite, chunksPerPage: number): Promise<EmbeddingResult> {
  const name = "embedding";
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders: 1, embedding: "local" });
    const warmStart = Date.now();
    await call(platform, "POST", "/knowledge/documents/search", { query: "warm up the embedding model", mode: "semantic" });
    const modelWarmUpSeconds = (Date.now() - warmStart) / 1000;
    const pages = Math.max(1, Math.ceil(EMBED_CHUNKS / chunksPerPage));
    const cpu0 = cpuStart(platform);
    const startedAt = Date.now();
    const id = await createSource(platform, "bench embedding", site.sitemap("embed", pages));
    console.error(`embedding: model ready in ${modelWarmUpSeconds.toFixed(1)} s; loading ${pages} pages (~${EMBED_CHUNKS} chunks) with EMBEDDING_PROVIDER=local`);
    const deadline = startedAt + LOAD_TIMEOUT_MS;
    let firstChunksAt = 0;
    let loadedAt = 0;
    let stats = { total_chunks: 0, embedded_chunks: 0 };
    for (;;) {
      const [view, now] = [await call<SourceView>(platform, "GET", `/knowledge/${id}`), Date.now()];
      stats = await call(platform, "GET", "/knowledge/documents/stats");
      if (!firstChunksAt && stats.total_chunks > 0) firstChunksAt = now;
      if (!loadedAt && terminal(view.loading_status)) loadedAt = now;
      if (loadedAt && stats.total_chunks > 0 && stats.embedded_chunks >= stats.total_chunks) break;
      if (now > deadline) throw new Error(`embedding: ${stats.embedded_chunks}/${stats.total_chunks} chunks embedded after ${LOAD_TIMEOUT_MS / 1000} s`);
      await Promise.race([sleep(POLL_MS), platform.main.exited]);
    }
    const doneAt = Date.now();
    const cpu = cpuEnd(platform, cpu0);
    const embeddingSeconds = (doneAt - firstChunksAt) / 1000;
    const result: EmbeddingResult = {
      pages,
      chunks: stats.total_chunks,
      embedded: stats.embedded_chunks,
      modelWarmUpSeconds: round(modelWarmUpSeconds, 2),
      loadSeconds: round((loadedAt - startedAt) / 1000, 2),
      embeddingSeconds: round(embeddingSeconds, 2),
      chunksPerSecond: round(stats.total_chunks / embeddingSeconds, 1),
      cpu,
      ok: stats.embedded_chunks === stats.total_chunks,
    };
    console.error(`embedding: ${result.chunks} chunks embedded in ${embeddingSeconds.toFixed(1)} s = ${result.chunksPerSecond} chunks/s`);
    console.error(`embedding: ${describeCpu(cpu, (doneAt - startedAt) / 1000)}`);
    return result;
  } finally {
    await stopPlatform(platform);
  }
}

// ---------------------------------------------------------------- report

function markdownTable(rows: Row[]): string {
  const fmt = (n: number | null) => (n === null ? "—" : n >= 100 ? String(Math.round(n)) : n.toFixed(1));
  return [
    "| scenario | loaders | pages | seconds | pages/s | pages/s after first batch | pages/s per loader | target |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map((r) => `| ${r.scenario} | ${r.loaders} | ${r.pages} | ${r.seconds.toFixed(1)} | ${fmt(r.pagesPerSecond)} | ${fmt(r.steadyPagesPerSecond)} | ${fmt(r.pagesPerSecondPerLoader)} | ${r.target} |`),
  ].join("\n");
}

function throughputRows(results: ThroughputResult[]): Row[] {
  const single = results.find((r) => r.loaders === 1);
  return results.map((r) => {
    const perLoader = r.pagesPerSecond / r.loaders;
    const verdicts = [perLoader >= TARGET.pagesPerSecondPerLoader ? `per loader ≥ ${TARGET.pagesPerSecondPerLoader}: met` : `per loader ≥ ${TARGET.pagesPerSecondPerLoader}: MISSED`];
    if (r.loaders > 1 && single) {
      const scaling = r.pagesPerSecond / single.pagesPerSecond;
      verdicts.push(`${scaling.toFixed(2)}× one loader (needs ≥ ${(TARGET.minScaling * r.loaders) / 2}×): ${scaling >= (TARGET.minScaling * r.loaders) / 2 ? "met" : "MISSED"}`);
    }
    if (!r.ok) verdicts.push(`INCOMPLETE (${r.problems.length} problem(s), below)`);
    return {
      scenario: `throughput (${r.sources.length} sources)`,
      loaders: r.loaders,
      pages: r.pages,
      seconds: r.seconds,
      pagesPerSecond: r.pagesPerSecond,
      steadyPagesPerSecond: r.steadyPagesPerSecond,
      pagesPerSecondPerLoader: round(perLoader),
      target: verdicts.join("; "),
    };
  });
}

// ---------------------------------------------------------------- main

/**
 * The database: as the test harness picks it (MONGO_URL, a mongo container, else the local MongoDB-compatible
 * server), or BENCH_MONGO_BINARY, another build of the local server (e.g. a patched one), to compare databases.
 */
async function startDatabase(): Promise<RunningServer & { kind: string }> {
  const binary = process.env.BENCH_MONGO_BINARY;
  if (!binary) return startMongo();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-mongo-"));
  const local = await startLocalMongo({ dataDir, binary });
  return {
    kind: `local MongoDB-compatible server built at ${binary}`,
    url: local.url,
    async stop() {
      await local.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  const mongo = own(await startDatabase());
  const site = own(await startBenchSite());
  console.error(`NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}; site ${site.baseUrl}; budget ${Math.round(RUN_BUDGET_MS / 1000)} s`);
  const disarmWatchdog = startWatchdog(RUN_BUDGET_MS);
  const infra = { nats: nats.url, mongo: mongo.url };

  // A scenario that fails is reported as such and the others still run: a partial table says more than none.
  const errors: { scenario: string; loaders: number; error: string }[] = [];
  const attempt = async <T>(scenario: string, loaders: number, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      console.error(`${scenario} FAILED: ${message}`);
      errors.push({ scenario, loaders, error: message.split("\n")[0]! });
      await stopAll();
      return undefined;
    }
  };
  const throughputs: ThroughputResult[] = [];
  if (SCENARIOS.has("throughput")) {
    for (const loaders of LOADER_COUNTS) {
      const result = await attempt(`throughput-${loaders}`, loaders, () => throughput(infra, site, loaders));
      if (result) throughputs.push(result);
    }
  }
  const resumed = SCENARIOS.has("resume") ? await attempt("resume", 1, () => resume(infra, site)) : undefined;
  const measured = throughputs.find((t) => t.indexedDocuments > 0);
  const chunksPerPage = measured ? measured.chunks / measured.indexedDocuments : DEFAULT_CHUNKS_PER_PAGE;
  const embedded = SCENARIOS.has("embedding") ? await attempt("embedding", 1, () => embedding(infra, site, chunksPerPage)) : undefined;
  disarmWatchdog();

  const rows = throughputRows(throughputs);
  if (resumed) {
    rows.push({
      scenario: `resume (SIGKILL at ${Math.round(KILL_AT * 100)}%, lease ${resumed.leaseSeconds} s)`,
      loaders: 1,
      pages: resumed.final.loading_urls_done,
      seconds: resumed.totalSeconds,
      pagesPerSecond: resumed.pagesPerSecond,
      steadyPagesPerSecond: null,
      pagesPerSecondPerLoader: null,
      target: `resumed ${resumed.resumeSeconds.toFixed(1)} s after the kill; documents ${resumed.documents.distinct}/${resumed.pages} distinct: ${resumed.ok ? "ok" : "FAILED"}`,
    });
  }
  if (embedded) {
    rows.push({
      scenario: `embedding, local model (${embedded.chunks} chunks)`,
      loaders: 1,
      pages: embedded.pages,
      seconds: embedded.embeddingSeconds,
      pagesPerSecond: round(embedded.pages / embedded.embeddingSeconds),
      steadyPagesPerSecond: null,
      pagesPerSecondPerLoader: null,
      target: `${embedded.chunksPerSecond} chunks/s (reported separately, no target)`,
    });
  }

  for (const e of errors) {
    rows.push({ scenario: e.scenario, loaders: e.loaders, pages: 0, seconds: 0, pagesPerSecond: 0, steadyPagesPerSecond: null, pagesPerSecondPerLoader: null, target: `FAILED: ${e.error}` });
  }

  const knobs = Object.fromEntries(LOADER_KNOBS.filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; load average ${host.loadAverage1mBefore} before the run, ` +
      `${os.loadavg().map((l) => l.toFixed(2)).join(" ")} after; the site, NATS, the database and every platform process share these cores`,
  );
  console.log(
    `site: ${PAGES} pages of ~${Math.round(site.averagePageBytes / 1000)} KB HTML, split into ${SOURCES} sitemap sources for throughput; database ${mongo.kind}; ` +
      `EMBEDDING_PROVIDER=none except the embedding row; loader settings ${Object.keys(knobs).length ? JSON.stringify(knobs) : "the platform's defaults"}`,
  );
  console.log(
    "seconds: from the POST that creates the sources to the poll (every 250 ms) that sees the last one loaded, so they include " +
      "sitemap listing and the loader's claim of the job; 'after first batch' counts from the first poll that saw loading_urls_done > 0.\n",
  );
  console.log(markdownTable(rows));
  for (const t of throughputs) {
    console.log(`\n${t.loaders} loader(s): ${describeCpu(t.cpu, t.seconds)}; ${t.chunks} chunks of ${t.indexedDocuments} documents (${(t.chunks / Math.max(1, t.indexedDocuments)).toFixed(1)} per page)`);
    console.log(`  per source: ${t.perSource.map((s) => `#${s.id} ${s.pages} pages ${s.status}${s.seconds === null ? "" : ` after ${s.seconds} s`}`).join(", ")}`);
    for (const problem of t.problems) console.log(`  INCOMPLETE: ${problem}`);
  }
  if (resumed) {
    console.log(
      `\nresume: killed at ${resumed.killedAtDone}/${resumed.pages} pages shown (${resumed.persistedAtKill} saved), ${resumed.killedAfterSeconds} s in; ` +
        `replacement loader ready ${resumed.replacementReadySeconds} s after the kill, progress again after ${resumed.resumeSeconds} s ` +
        `(LOAD_LEASE_SECONDS=${resumed.leaseSeconds}); total ${resumed.totalSeconds} s; ${resumed.pagesRefetched} pages fetched twice`,
    );
    console.log(
      `resume check: status ${resumed.final.loading_status}, document_count ${resumed.final.document_count} (expected ${resumed.pages}), ` +
        `loading_urls_done ${resumed.final.loading_urls_done}, documents listed ${resumed.documents.listed}, distinct URLs ${resumed.documents.distinct}: ` +
        `${resumed.ok ? "OK, no lost or duplicated documents" : "FAILED"}`,
    );
  }
  if (embedded) {
    console.log(
      `\nembedding (measured through the API: GET /api/v1/knowledge/documents/stats embedded_chunks vs total_chunks): ${embedded.chunks} chunks of ≤ 1000 characters ` +
        `from ${embedded.pages} pages embedded in ${embedded.embeddingSeconds} s = ${embedded.chunksPerSecond} chunks/s ` +
        `(≈ ${(embedded.chunksPerSecond / chunksPerPage).toFixed(1)} pages/s at ${chunksPerPage.toFixed(1)} chunks per page); the load itself took ${embedded.loadSeconds} s; ` +
        `model warm-up ${embedded.modelWarmUpSeconds} s (excluded)`,
    );
    console.log(`embedding: ${describeCpu(embedded.cpu, embedded.embeddingSeconds)}`);
  }

  writeResults(RESULTS_FILE, {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAfter: os.loadavg().map((l) => round(l, 2)) },
    database: mongo.kind,
    pages: PAGES,
    sources: SOURCES,
    averagePageBytes: site.averagePageBytes,
    loaderSettings: knobs,
    target: TARGET,
    pollMs: POLL_MS,
    rows,
    throughput: throughputs.map(({ timeline, sources, ...rest }) => ({ ...rest, sourceSizes: sources, sourceViews: timeline.sources })),
    resume: resumed,
    embedding: embedded,
    errors,
  });
  console.log(`\nresults written to ${path.relative(ROOT, RESULTS_FILE)}`);
  const failed = [
    ...throughputs.filter((t) => !t.ok).map((t) => `throughput-${t.loaders}`),
    ...(resumed && !resumed.ok ? ["resume"] : []),
    ...(embedded && !embedded.ok ? ["embedding"] : []),
    ...errors.map((e) => e.scenario),
  ];
  if (failed.length) throw new Error(`incomplete scenarios: ${failed.join(", ")}`);
}

runBench(main);
