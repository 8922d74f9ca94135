import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { databaseUrl, freePort } from "../test/harness/servers";
import { apiClient } from "../test/harness/http";
import { signupWhenReady, startNode, stopAll, waitForOk } from "./processes";
import { positiveIntEnv } from "../lib/env";

/** Events per measurement (agents created, each one agent.created delivery). */
const EVENTS = positiveIntEnv(process.env, "BENCH_EVENTS", 300);
/** Creates in flight at once. */
const CREATE_CONCURRENCY = 16;
const STARTUP_TIMEOUT_MS = 60_000;
const DELIVERY_TIMEOUT_MS = 120_000;

export interface EventRow {
  webhooksReplicas: number;
  events: number;
  /** Agents created per second (the write path with its event recorded). */
  createsPerSecond: number;
  /** Events from the first create to the last delivery, per second. */
  eventsPerSecond: number;
}

/** A receiver that counts deliveries and resolves when `expected` have arrived. */
async function startCounter(expected: number) {
  let count = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const server = http.createServer((req, res) => {
    req.resume().on("end", () => {
      res.writeHead(204).end();
      if (++count === expected) done();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`, all, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * Event throughput end to end over NATS: one process with the gateway and the emitting services, `replicas`
 * webhooks processes, a local receiver. Times EVENTS agent creations (16 in flight) to the last delivery.
 */
export async function measureEvents(serverScript: string, natsUrl: string, mongoUrl: string, replicas: number): Promise<EventRow> {
  const port = await freePort();
  const env = {
    NODE_ENV: "production",
    JWT_SECRET: randomBytes(32).toString("hex"),
    LOG_LEVEL: "warn",
    TRANSPORTER: natsUrl,
    NAMESPACE: `bench-events-${randomBytes(3).toString("hex")}`,
    // A fresh database per measurement: the local server reads every document it filters, so rounds on one
    // database would measure its growth.
    MONGO_URL: databaseUrl(mongoUrl, `bench_events_${replicas}_${randomBytes(3).toString("hex")}`),
    PORT: String(port),
    ALLOW_LOOPBACK_TARGETS: "true",
    WEBHOOK_POLL_MS: "200",
    MCP_PORT: "0",
  };
  const receiver = await startCounter(EVENTS);
  try {
    const procs = [
      startNode("events api", serverScript, { ...env, SERVICES: "gateway,users,api-keys,agents" }),
      ...Array.from({ length: replicas }, (_, i) => startNode(`webhooks ${i + 1}`, serverScript, { ...env, SERVICES: "webhooks" })),
    ];
    const base = `http://127.0.0.1:${port}`;
    await waitForOk(`${base}/health`, procs, STARTUP_TIMEOUT_MS);
    const api = apiClient(base);
    const token = await signupWhenReady(api, "bench-events", STARTUP_TIMEOUT_MS);
    await waitForOk(`${base}/api/v1/webhook-subscriptions`, procs, STARTUP_TIMEOUT_MS, { authorization: `Bearer ${token}` });
    const sub = await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: receiver.url, event_types: ["agent.created"] } });
    if (sub.status !== 201) throw new Error(`subscription: ${sub.status}`);

    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        while (next < EVENTS) {
          const n = next++;
          const res = await api("POST", "/api/v1/agents", { token, body: { name: `bench-${n}` } });
          if (res.status !== 201) throw new Error(`create: ${res.status}`);
        }
      }),
    );
    const created = Date.now();
    await Promise.race([receiver.all, new Promise((_, reject) => setTimeout(() => reject(new Error("deliveries timed out")), DELIVERY_TIMEOUT_MS))]);
    const delivered = Date.now();
    return {
      webhooksReplicas: replicas,
      events: EVENTS,
      createsPerSecond: Math.round((EVENTS * 1000) / (created - started)),
      eventsPerSecond: Math.round((EVENTS * 1000) / (delivered - started)),
    };
  } finally {
    await stopAll();
    await receiver.close();
  }
}

export function eventsTable(rows: EventRow[]): string {
  return [
    "| webhooks replicas | events | creates/s (write + event) | events/s end to end (create to delivery) |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.webhooksReplicas} | ${r.events} | ${r.createsPerSecond} | ${r.eventsPerSecond} |`),
  ].join("\n");
}
