/** Latency and CPU of a query loop: shared by the search benches. */
import fs from "node:fs";
import { performance } from "node:perf_hooks";

export function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** CPU milliseconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux), or undefined. */
export function cpuMs(pid: number | "self" | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    // Fields 14 and 15 of stat (utime, stime), in clock ticks of 10 ms on Linux (USER_HZ 100).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

export interface Latency {
  p50: number;
  p99: number;
  qps: number;
  /** CPU ms per query of this process (the platform side, and the bench's client) and of the server, if given. */
  nodeCpu?: number;
  serverCpu?: number;
}

/** Runs `queries` through `search` from `clients` concurrent clients; per-query latency, throughput and CPU. */
export async function latency<Q>(search: (q: Q) => Promise<unknown>, queries: Q[], clients: number, serverPid?: number): Promise<Latency> {
  const times: number[] = [];
  let next = 0;
  const [node0, server0] = [cpuMs("self"), cpuMs(serverPid)];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < queries.length) {
        const q = queries[next++]!;
        const t0 = performance.now();
        // Each client waits its turn on the event loop, as concurrent requests to one process do.
        await new Promise((r) => setImmediate(r));
        await search(q);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const [node1, server1] = [cpuMs("self"), cpuMs(serverPid)];
  times.sort((a, b) => a - b);
  const perQuery = (a?: number, b?: number) => (a !== undefined && b !== undefined ? (b - a) / queries.length : undefined);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), qps: queries.length / elapsed, nodeCpu: perQuery(node0, node1), serverCpu: perQuery(server0, server1) };
}
