import os from "node:os";
import type { BrokerOptions, LogLevels } from "moleculer";
import type { Config } from "./lib/config";
import { distinctSchemas } from "./lib/distinct-schemas";
import { CoalescingNatsTransporter } from "./lib/nats-transporter";
import { streamCancellation } from "./lib/stream-cancellation";
import { PlatformValidator } from "./lib/validator";

/**
 * Broker options for every process, from the process's configuration tree. No TRANSPORTER means one process
 * holding every service (the embedded default); TRANSPORTER=nats://... joins a cluster where SERVICES picks what
 * this process runs.
 */
export function brokerOptions(config: Config, overrides: Partial<BrokerOptions> = {}): BrokerOptions {
  const options: BrokerOptions = {
    namespace: config.namespace,
    nodeID: `${os.hostname()}-${process.pid}`,
    // A NATS URL string is a valid transporter setting; the typings only list transporter names.
    transporter: (config.transporter || null) as BrokerOptions["transporter"],
    logger: { type: "Console", options: { level: config.logLevel as LogLevels, formatter: "short" } },
    serializer: "JSON",
    requestTimeout: 30_000,
    retryPolicy: { enabled: false },
    // A failed node is dropped from the registry quickly so calls go to live replicas.
    heartbeatInterval: 5,
    heartbeatTimeout: 15,
    registry: { strategy: "RoundRobin", preferLocal: true },
    // fastest-validator, with null in an optional non-nullable field read as "not given" (lib/validator.ts).
    validator: new PlatformValidator(),
    // Per-process cache for actions that declare `cache` (hot reads such as users.me); see CACHE_TTL_SECONDS.
    cacher: config.cacheTtlSeconds > 0 ? { type: "Memory", options: { ttl: config.cacheTtlSeconds } } : undefined,
    // METRICS_PORT exposes Prometheus metrics (e.g. knowledge_loader_jobs_pending for an autoscaler).
    metrics: config.metricsPort
      ? { enabled: true, reporter: [{ type: "Prometheus", options: { port: config.metricsPort, path: "/metrics" } }] }
      : { enabled: false },
    tracking: { enabled: true, shutdownTimeout: 10_000 },
    // Action schemas reach other nodes whole (lib/distinct-schemas.ts). A stream a caller on another node stops
    // reading (an abandoned download) is destroyed where it is produced.
    middlewares: [distinctSchemas(), streamCancellation()],
    ...overrides,
  };
  return { ...options, transporter: natsTransporter(options.transporter) };
}

/**
 * nats.js waits 2 s (plus jitter) between reconnect attempts by default, so a restarted NATS was answering
 * again ~4 s before the API did; 250 ms gets every process back within a second of NATS returning, at the
 * cost of one connection attempt per process every 250 ms while NATS is down.
 */
const NATS_RECONNECT = { maxReconnectAttempts: -1, reconnectTimeWait: 250, reconnectJitter: 100 };

/** A NATS URL becomes the coalescing NATS transporter (lib/nats-transporter.ts); anything else is kept. */
function natsTransporter(transporter: BrokerOptions["transporter"]): BrokerOptions["transporter"] {
  return typeof transporter === "string" && transporter.startsWith("nats://")
    ? new CoalescingNatsTransporter({ url: transporter, ...NATS_RECONNECT })
    : transporter;
}
