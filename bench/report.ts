import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Measurement } from "./load";

/** The foundation issue's target for the NATS deployment, at TARGET_CONNECTIONS. */
export const TARGET = { scenario: "nats", connections: 32, minRatioToCeiling: 0.5, maxP99Ms: 20 } as const;
const CEILING_SCENARIO = "ceiling";

/** A measurement of one scenario, set against the ceiling at the same connection count. */
export interface Row extends Measurement {
  scenario: string;
  ratioToCeiling: number;
}

/** Adds each measurement's req/s ratio to the ceiling's at the same connection count. */
export function compareToCeiling(results: (Measurement & { scenario: string })[]): Row[] {
  return results.map((r) => {
    const ceiling = results.find((c) => c.scenario === CEILING_SCENARIO && c.connections === r.connections);
    if (!ceiling) throw new Error(`no ceiling measurement at ${r.connections} connections`);
    return { ...r, ratioToCeiling: r.requestsPerSecond / ceiling.requestsPerSecond };
  });
}

/** The median of some figures (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The first of `rows` with each of the figures `keys` names replaced by its median over all of them. */
export function medianFields<T extends object>(rows: T[], keys: (keyof T)[]): T {
  return { ...rows[0]!, ...Object.fromEntries(keys.map((key) => [key, median(rows.map((row) => row[key] as number))])) };
}

/** Per scenario and connection count, the median of each figure over the rounds (ratios were taken within rounds). */
export function medianRows(rounds: Row[][]): Row[] {
  return rounds[0]!.map((first) => {
    const same = rounds.map((round) => round.find((r) => r.scenario === first.scenario && r.connections === first.connections)!);
    const of = (pick: (r: Row) => number) => median(same.map(pick));
    return {
      ...first,
      requestsPerSecond: of((r) => r.requestsPerSecond),
      p50Ms: of((r) => r.p50Ms),
      p99Ms: of((r) => r.p99Ms),
      totalRequests: same.reduce((sum, r) => sum + r.totalRequests, 0),
      ratioToCeiling: of((r) => r.ratioToCeiling),
    };
  });
}

/** The target row's ratio to the ceiling in one round. */
export function ratioOf(round: Row[]): number {
  return round.find((r) => r.scenario === TARGET.scenario && r.connections === TARGET.connections)?.ratioToCeiling ?? NaN;
}

function p99VersusTarget(row: Row): string {
  if (row.connections !== TARGET.connections) return "—";
  return row.p99Ms < TARGET.maxP99Ms ? `ok (< ${TARGET.maxP99Ms} ms)` : `miss (≥ ${TARGET.maxP99Ms} ms)`;
}

/** The results as a markdown table, one line per scenario and connection count. */
export function markdownTable(rows: Row[]): string {
  const lines = [
    "| scenario | connections | req/s | p50 ms | p99 ms | req/s ÷ ceiling | p99 vs target |",
    "|---|---:|---:|---:|---:|---:|---|",
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.connections} | ${Math.round(r.requestsPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.ratioToCeiling.toFixed(2)} | ${p99VersusTarget(r)} |`,
    ),
  ];
  return lines.join("\n");
}

/** One line saying whether the NATS deployment meets the target, and by how much. */
export function targetVerdict(rows: Row[]): string {
  const row = rows.find((r) => r.scenario === TARGET.scenario && r.connections === TARGET.connections);
  if (!row) return `target: no ${TARGET.scenario} measurement at ${TARGET.connections} connections`;
  const ratioOk = row.ratioToCeiling >= TARGET.minRatioToCeiling;
  const p99Ok = row.p99Ms < TARGET.maxP99Ms;
  return (
    `target (${TARGET.scenario}, ${TARGET.connections} connections): ${ratioOk && p99Ok ? "MET" : "MISSED"} — ` +
    `req/s ÷ ceiling ${row.ratioToCeiling.toFixed(2)} (needs ≥ ${TARGET.minRatioToCeiling}), ` +
    `p99 ${row.p99Ms} ms (needs < ${TARGET.maxP99Ms})`
  );
}

/** The machine the numbers came from, with its load before the run (other work skews every number). */
export function machine() {
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage1mBefore: Number(os.loadavg()[0]!.toFixed(2)),
  };
}

/** Writes the run as JSON (creating the directory), for comparing runs over time. */
export function writeResults(file: string, data: object): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
}
