import { measureLoad, percentile, type LoadOptions, type Measurement } from "../load";

const PUSH_TIMEOUT_MS = 60_000;

/** Throughput and latency of a set of timed operations. */
export interface Stats {
  count: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Count, throughput over `wallMs` and latency percentiles of timed operations. */
export function summarize(latenciesMs: number[], wallMs: number): Stats {
  const sorted = Float64Array.from(latenciesMs).sort();
  return {
    count: sorted.length,
    perSecond: Number(((sorted.length * 1000) / wallMs).toFixed(2)),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: percentile(sorted, 100),
  };
}

/** What the benchmark reads from a push answer: the team and its rendered agents. */
export interface PushedTeam {
  id: number;
  updated_at: string;
  agents: { id: number; name: string; instructions: string | null; updated_at: string }[];
}

/** POSTs one team document to /api/v1/teams/push and returns the answer with its round-trip time. */
export async function push(baseUrl: string, token: string, doc: object): Promise<{ ms: number; team: PushedTeam }> {
  const body = JSON.stringify(doc);
  const started = performance.now();
  const res = await fetch(`${baseUrl}/api/v1/teams/push`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(PUSH_TIMEOUT_MS),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`push of "${(doc as { name?: string }).name}" answered ${res.status}: ${text.slice(0, 1000)}`);
  return { ms, team: JSON.parse(text) as PushedTeam };
}

/**
 * Runs `jobs` with at most `concurrency` in flight; each job returns its own latency. Throughput is jobs
 * over wall time, so at concurrency > 1 it shows what overlapping pushes gain.
 */
export async function runJobs(jobs: (() => Promise<number>)[], concurrency: number): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < jobs.length) latencies.push(await jobs[next++]!());
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
  return { latencies, wallMs: performance.now() - started };
}

/**
 * Loads `paths` on `baseUrl` in turn (each connection cycles through them) for `warmupSeconds`
 * (discarded), then measures for `durationSeconds`, as bench/load.ts's measureLoad does.
 */
export function loadPaths(
  baseUrl: string,
  paths: string[],
  headers: Record<string, string>,
  connections: number,
  warmupSeconds: number,
  durationSeconds: number,
): Promise<Measurement> {
  // `requests` is autocannon API that bench/autocannon.d.ts does not declare.
  const options = { url: baseUrl, headers, connections, requests: paths.map((path) => ({ method: "GET", path })) } as LoadOptions;
  return measureLoad(options, paths.join(", "), warmupSeconds, durationSeconds);
}
