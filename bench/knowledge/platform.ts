import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { databaseUrl, freePort } from "../../test/harness/servers";
import { apiClient, signup, type Api } from "../../test/harness/http";
import { startNode, waitForOk, type BenchProcess } from "../processes";
import { cpuSnapshot, machineTicks } from "./procs";
import { LOAD_TIMEOUT_MS, POLL_MS, RETRY_MS, round, RUN_ID, SERVER_SCRIPT, sleep, STARTUP_TIMEOUT_MS, terminal } from "./settings";

// The platform of one knowledge-bench scenario (API and loader processes), polling it, and its CPU use.

export interface SourceView {
  id: number;
  loading_status: string;
  loading_urls_done: number;
  loading_urls_total: number | null;
  document_count: number;
  loading_error: string | null;
}

export interface Platform {
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
export async function startPlatform(
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

export async function stopPlatform(platform: Platform | undefined) {
  if (platform) await Promise.all(platform.children.map((c) => c.stop()));
}

export async function call<T = any>(platform: Platform, method: string, route: string, body?: unknown): Promise<T> {
  const res = await Promise.race([platform.api(method, `/api/v1${route}`, { token: platform.token, body }), platform.main.exited]);
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

export async function createSource(platform: Platform, name: string, sitemap: string): Promise<number> {
  const created = await call<SourceView>(platform, "POST", "/knowledge", { name, data_type: "sitemap", paths: [sitemap] });
  return created.id;
}

// ---------------------------------------------------------------- polling

export interface Timeline {
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
export async function pollUntilLoaded(platform: Platform, ids: number[], startedAt: number): Promise<Timeline> {
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
export async function checkDocuments(platform: Platform, id: number, expected: number) {
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

export interface CpuUse {
  /** CPU seconds per process during the measured interval. */
  seconds: Record<string, number>;
  /** Share of the machine's cores busy during the interval (everything on the machine, not only the bench). */
  machineBusy: number | null;
}

export function cpuStart(platform: Platform) {
  return { procs: cpuSnapshot(platform.names), machine: machineTicks() };
}

export function cpuEnd(platform: Platform, start: ReturnType<typeof cpuStart>): CpuUse {
  const end = cpuSnapshot(platform.names);
  const machineNow = machineTicks();
  const seconds: Record<string, number> = {};
  for (const [name, value] of end) seconds[name] = round(value - (start.procs.get(name) ?? 0), 1);
  const machineBusy =
    start.machine && machineNow ? round((machineNow.busy - start.machine.busy) / Math.max(1, machineNow.total - start.machine.total), 2) : null;
  return { seconds, machineBusy };
}

export function describeCpu(cpu: CpuUse, wallSeconds: number): string {
  const parts = Object.entries(cpu.seconds)
    .filter(([, s]) => s >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${s.toFixed(1)} s (${Math.round((100 * s) / wallSeconds)}%)`);
  return `CPU over ${wallSeconds.toFixed(1)} s: ${parts.join(", ")}; machine busy ${cpu.machineBusy === null ? "?" : `${Math.round(cpu.machineBusy * 100)}%`} of ${os.availableParallelism()} cores`;
}
