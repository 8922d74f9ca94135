import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { randomBytes } from "node:crypto";
import { ServiceBroker, type BrokerOptions, type ServiceSchema } from "moleculer";
import mongoose from "mongoose";
import { brokerOptions } from "../../moleculer.config";
import { closeAllDatabases } from "../../lib/db";
import { configured, SERVICE_REGISTRY } from "../../services";
import { loadConfig } from "../../lib/config";
import type { Env } from "../../lib/env";
import { databaseUrl } from "./servers";
import { scaled } from "./wait";

export interface Cluster {
  /** Base URL of the gateway, e.g. http://127.0.0.1:PORT */
  baseUrl: string;
  brokers: ServiceBroker[];
  /** The database URL every service of this cluster uses. */
  mongoUrl: string;
  /** Moleculer namespace, for processes that join the cluster. */
  namespace: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /**
   * Service names per broker; each inner list is one node. Default: gateway alone, the core services on a
   * second node (search and knowledge loading, which load an embedding model and poll for jobs, only when named).
   */
  nodes?: string[][];
  /** Extra schemas (e.g. event listeners) started on their own node. */
  extraServices?: ServiceSchema<any, any, any>[];
  /** Database name; one per test file keeps files independent. */
  database: string;
  /** No transporter: every service in one broker, as `npm start` runs. */
  embedded?: boolean;
  /** Settings of this cluster, as environment variables over the test run's (the services get the typed tree). */
  env?: Env;
  /** The services' database client emits command events (a test counts the database reads a request caused). */
  monitorCommands?: boolean;
}

/** Services a test file starts only when it names them. */
const OPT_IN_SERVICES = ["search", "knowledge", "knowledge-loader", "scheduler", "webhooks"];

/**
 * A cluster serving the routes the specs that read every route need: the gateway alone, the core services
 * together, and the named opt-in services (e.g. search and knowledge) on a third node, with no embedding model.
 */
export function routedCluster(database: string, ...optIn: string[]): ClusterOptions {
  return { database, env: { EMBEDDING_PROVIDER: "none" }, nodes: [["gateway"], ["users", "api-keys", "agents", "tools", "traits", "teams", "entities", "tasks", "mcp"], optIn] };
}

/** Waits until the gateway has generated a REST alias for an action of every named service. */
async function waitForAliases(gateway: { aliases?: { action?: string }[] }, services: string[], timeoutMs = scaled(15_000)) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const actions = (gateway.aliases ?? []).map((a) => a.action ?? "");
    if (services.every((s) => actions.some((a) => a.startsWith(`${s}.`)))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gateway has no aliases for ${services.join(", ")} after ${timeoutMs} ms`);
}

/**
 * Starts the platform's services on real brokers: by default the gateway on one node and the rest on
 * another, connected over the test run's NATS server, so every HTTP call crosses the transporter.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const natsUrl = process.env.TEST_NATS_URL;
  const mongoBase = process.env.TEST_MONGO_URL;
  if (!natsUrl || !mongoBase) throw new Error("test harness servers are not running (global setup)");
  const url = new URL(databaseUrl(mongoBase, options.database));
  if (options.monitorCommands) url.searchParams.set("monitorCommands", "true");
  const mongoUrl = url.toString();

  // Start every file from an empty database.
  const conn = await mongoose.createConnection(mongoUrl).asPromise();
  await conn.dropDatabase();
  await conn.close();

  const allNames = Object.keys(SERVICE_REGISTRY);
  const nodes = options.embedded
    ? [allNames]
    : (options.nodes ?? [["gateway"], allNames.filter((n) => !["gateway", ...OPT_IN_SERVICES].includes(n))]);
  const namespace = `test-${options.database}-${randomBytes(3).toString("hex")}`;
  const brokers: ServiceBroker[] = [];
  let gateway: (ServiceSchema & { server?: Server; aliases?: { action?: string }[] }) | undefined;

  const config = loadConfig({ ...process.env, ...options.env, MONGO_URL: mongoUrl });
  const makeBroker = (index: number) =>
    new ServiceBroker(
      brokerOptions(config, {
        namespace,
        nodeID: `${namespace}-node-${index}`,
        transporter: (options.embedded ? null : natsUrl) as BrokerOptions["transporter"],
        logger: { type: "Console", options: { level: process.env.TEST_LOG_LEVEL ?? "warn" } },
        // The platform's heartbeats (5 s, 15 s): with 6 s, a loaded 2-core run once lost a whole cluster's nodes.
      }),
    );

  nodes.forEach((names, index) => {
    const broker = makeBroker(index);
    for (const name of names) {
      const registered = SERVICE_REGISTRY[name];
      if (!registered) throw new Error(`unknown service ${name}`);
      // The gateway listens on an ephemeral loopback port: test files run in parallel.
      const schema = configured(registered, name === "gateway" ? { ...config, port: 0 } : config);
      const service = broker.createService(name === "gateway" ? { ...schema, settings: { ...schema.settings, ip: "127.0.0.1" } } : schema);
      if (name === "gateway") gateway = service as never;
    }
    brokers.push(broker);
  });
  if (options.extraServices?.length) {
    const broker = makeBroker(nodes.length);
    for (const schema of options.extraServices) broker.createService(configured(schema, config));
    brokers.push(broker);
  }

  await Promise.all(brokers.map((b) => b.start()));
  const serviceNames = nodes.flat().filter((n) => n !== "gateway");
  await brokers[0]!.waitForServices(serviceNames, scaled(20_000));
  if (!gateway?.server) throw new Error("cluster has no gateway");
  const routed = serviceNames.filter((n) => Object.values(SERVICE_REGISTRY[n]!.actions ?? {}).some((a) => typeof a === "object" && "rest" in a));
  await waitForAliases(gateway, routed);
  const { port } = gateway.server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    brokers,
    mongoUrl,
    namespace,
    async stop() {
      await Promise.all(brokers.map((b) => b.stop()));
      await closeAllDatabases();
    },
  };
}
