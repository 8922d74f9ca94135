import http from "node:http";
import type { ServiceBroker } from "moleculer";
import type { Config } from "./config";
import { pingDatabases } from "./db";
import { healthReport } from "./health";

/** Where a process is in its life; the probes answer 503 outside "running". */
export type Phase = "starting" | "running" | "stopping";

/** A dependency must answer within this (the charts give a readiness probe 3 s in all). */
export const READY_TIMEOUT_MS = 2000;

/** Named checks of what a process must reach to serve; each resolves when its dependency answered. */
export type ReadinessChecks = Record<string, () => Promise<void>>;

export interface CheckResult {
  status: "ok" | "failed";
  error?: string;
}

/**
 * What this process needs to serve requests: its databases (a ping on every connection it opened), the transporter
 * (a NATS round trip, when it joins a cluster) and Typesense (its /health, when this process runs search over it).
 */
export function dependencyChecks(broker: ServiceBroker, config: Config, services: string[]): ReadinessChecks {
  const checks: ReadinessChecks = { database: pingDatabases };
  if (broker.transit) checks.transporter = () => transporterRoundTrip(broker);
  if (services.includes("search") && config.search.engine === "typesense") checks.typesense = () => typesenseAnswers(config.search.typesense.url);
  return checks;
}

/** A PING answered by the NATS server: the connection flag alone stays true for a while after the server is gone. */
async function transporterRoundTrip(broker: ServiceBroker): Promise<void> {
  const transit = broker.transit!;
  if (!transit.connected) throw new Error("not connected");
  const client = (transit.tx as unknown as { client?: { flush?: () => Promise<void> } }).client;
  await client?.flush?.();
}

/** Typesense's own health endpoint (no API key needed) answers 200. */
export async function typesenseAnswers(url: string): Promise<void> {
  const response = await fetch(`${url.replace(/\/+$/, "")}/health`, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`GET /health answered ${response.status}`);
}

/** Runs every check at once, each bounded by `timeoutMs`; ready when all answered. */
export async function runChecks(checks: ReadinessChecks, timeoutMs = READY_TIMEOUT_MS) {
  const results = await Promise.all(Object.entries(checks).map(async ([name, check]) => [name, await bounded(check, timeoutMs)] as const));
  return { ready: results.every(([, result]) => result.status === "ok"), checks: Object.fromEntries(results) };
}

async function bounded(check: () => Promise<void>, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([check(), timeout]);
    return { status: "ok" };
  } catch (err) {
    return { status: "failed", error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export interface ProbeState {
  phase(): Phase;
  /** The readiness checks, known once the broker exists. */
  checks(): ReadinessChecks;
}

/**
 * The probe port of every process (HEALTH_PORT), apart from the API: GET /health (the interface's report while the
 * process runs), /health/live (the process runs its services: startup and liveness probes) and /health/ready
 * (its dependencies answer: readiness). Every answer but a running one is 503 with `status` saying why.
 */
export function startProbeServer(port: number, config: Pick<Config, "serverName" | "apiUrl">, state: ProbeState): http.Server {
  const report = healthReport(config);
  const send = (res: http.ServerResponse, status: number, body: object) =>
    void res.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store" }).end(JSON.stringify(body));
  return http
    .createServer((req, res) => {
      const { pathname } = new URL(req.url ?? "/", "http://probe");
      if (!["/health", "/health/live", "/health/ready"].includes(pathname)) return void res.writeHead(404).end();
      if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405, { Allow: "GET, HEAD" }).end();
      const phase = state.phase();
      if (phase !== "running") return send(res, 503, { status: phase });
      if (pathname === "/health") return send(res, 200, report);
      if (pathname === "/health/live") return send(res, 200, { status: "alive" });
      void runChecks(state.checks()).then(({ ready, checks }) => send(res, ready ? 200 : 503, { status: ready ? "ready" : "not_ready", checks }));
    })
    .listen(port, "0.0.0.0");
}
