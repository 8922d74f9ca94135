import autocannon from "autocannon";

/** Latencies are reported to this many decimals of a millisecond (as bench/load.ts does). */
const LATENCY_DECIMALS = 2;
const PUSH_TIMEOUT_MS = 60_000;

/** Throughput and latency of a set of timed operations. */
export interface Stats {
  count: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Nearest-rank percentile of ascending-sorted values (bench/load.ts's definition). */
export function percentile(sorted: Float64Array, p: number): number {
  const value = sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
  return Number(value.toFixed(LATENCY_DECIMALS));
}

export function summarize(latenciesMs: number[], wallMs: number): Stats {
  const sorted = Float64Array.from(latenciesMs).sort();
  return {
    count: sorted.length,
    perSecond: Number(((sorted.length * 1000) / wallMs).toFixed(2)),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: Number((sorted[sorted.length - 1] ?? NaN).toFixed(LATENCY_DECIMALS)),
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

/** One autocannon run over a rotating set of paths. */
export interface LoadResult {
  connections: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
}

type Options = Parameters<typeof autocannon>[0];

/**
 * Loads `paths` on `baseUrl` in turn (each connection cycles through them) for `warmupSeconds`
 * (discarded), then measures for `durationSeconds`. Percentiles come from every response time, not
 * autocannon's whole-millisecond histogram; any error or non-2xx answer fails the run, as in bench/load.ts.
 */
export async function loadPaths(
  baseUrl: string,
  paths: string[],
  headers: Record<string, string>,
  connections: number,
  warmupSeconds: number,
  durationSeconds: number,
): Promise<LoadResult> {
  // `requests` is autocannon API that bench/autocannon.d.ts does not declare.
  const options = (duration: number) =>
    ({ url: baseUrl, headers, connections, duration, requests: paths.map((path) => ({ method: "GET", path })) }) as Options;
  await autocannon(options(warmupSeconds));
  const latencies: number[] = [];
  const run = autocannon(options(durationSeconds));
  run.on("response", (_client, _status, _bytes, responseTime) => void latencies.push(responseTime));
  const result = await run;
  const failures = result.errors + result.timeouts + result.non2xx;
  if (failures) {
    throw new Error(`${paths.join(", ")} at ${connections} connections: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx`);
  }
  const sorted = Float64Array.from(latencies).sort();
  return {
    connections,
    requestsPerSecond: result.requests.average,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    totalRequests: result.requests.total,
  };
}
