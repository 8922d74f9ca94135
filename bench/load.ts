import autocannon from "autocannon";

/** Latencies are reported to this many decimals of a millisecond. */
const LATENCY_DECIMALS = 2;

/** One measured autocannon run against one route. */
export interface Measurement {
  connections: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
}

/** Load options without the duration, which the warm-up and the measured run each set. */
export type LoadOptions = Omit<Parameters<typeof autocannon>[0], "duration">;

/** Nearest-rank percentile of ascending-sorted values, to LATENCY_DECIMALS. */
export function percentile(sorted: Float64Array, p: number): number {
  const value = sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
  return Number(value.toFixed(LATENCY_DECIMALS));
}

/**
 * Loads with `options` for `warmupSeconds` (discarded: JIT, pools and caches settle), then measures for
 * `durationSeconds`. Percentiles come from every response time rather than autocannon's histogram, which
 * rounds down to whole milliseconds. Any error or non-2xx answer fails the run (named `label` in the error):
 * it would no longer measure the route.
 */
export async function measureLoad(options: LoadOptions, label: string, warmupSeconds: number, durationSeconds: number): Promise<Measurement> {
  await autocannon({ ...options, duration: warmupSeconds });
  const latencies: number[] = [];
  const run = autocannon({ ...options, duration: durationSeconds });
  run.on("response", (_client, _status, _bytes, responseTime) => void latencies.push(responseTime));
  const result = await run;
  const failures = result.errors + result.timeouts + result.non2xx;
  if (failures) {
    throw new Error(`${label} at ${options.connections} connections: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx`);
  }
  const sorted = Float64Array.from(latencies).sort();
  return {
    connections: options.connections,
    requestsPerSecond: result.requests.average,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    totalRequests: result.requests.total,
  };
}

/** Measures GET `url` with `headers` at `connections` (see measureLoad). */
export function measure(
  url: string,
  headers: Record<string, string>,
  connections: number,
  warmupSeconds: number,
  durationSeconds: number,
): Promise<Measurement> {
  return measureLoad({ url, headers, connections }, url, warmupSeconds, durationSeconds);
}
