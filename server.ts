import { ServiceBroker } from "moleculer";
import { brokerOptions } from "./moleculer.config";
import { loadConfig } from "./lib/config";
import { closeAllDatabases } from "./lib/db";
import { configured, selectServices } from "./services";
import { startLocalMongo } from "./lib/local-mongo";
import { dependencyChecks, startProbeServer, type Phase, type ReadinessChecks } from "./lib/probes";

/**
 * Process entry point. Without MONGO_URL it starts the bundled MongoDB-compatible server with its data
 * under DATA_DIR, so `npm start` needs nothing else; in a cluster MONGO_URL points at the real database.
 */
async function main() {
  const config = loadConfig();
  let phase: Phase = "starting";
  let checks: ReadinessChecks = {};
  const probeServer = config.healthPort ? startProbeServer(config.healthPort, config, { phase: () => phase, checks: () => checks }) : undefined;
  let stopLocalMongo: (() => Promise<void>) | undefined;
  if (!config.mongoUrl) {
    const local = await startLocalMongo({ dataDir: `${config.dataDir}/mongo` });
    config.mongoUrl = `${local.url}/agent_platform`;
    stopLocalMongo = local.stop;
  }

  const broker = new ServiceBroker(brokerOptions(config));
  if (config.jwt.generatedSecret) {
    broker.logger.warn(
      `JWT_SECRET is not set: using the secret generated in ${config.dataDir}/secrets/jwt-secret (fine for one process; set JWT_SECRET in production and clusters)`,
    );
  }
  const schemas = selectServices(config.services).map((schema) => configured(schema, config));
  const gateway = schemas.find((schema) => schema.name === "gateway");
  for (const schema of schemas) if (schema !== gateway) broker.createService(schema);
  checks = dependencyChecks(broker, config, schemas.map((schema) => schema.name));

  const shutdown = async (signal: string) => {
    broker.logger.info(`${signal} received, stopping`);
    phase = "stopping";
    await broker.stop();
    await closeAllDatabases();
    await stopLocalMongo?.();
    probeServer?.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  await broker.start();
  // The gateway starts listening last, when every service of this process has started: its routes exist from
  // the first request, so nothing a probe lets through answers 404 for a service still starting.
  if (gateway) {
    // A service created after the broker started only logs a failed start (a taken port, say), and waiting for it
    // would hang with the probes saying "starting": fail the process instead, so it is restarted.
    const failed = new Promise<never>((_, reject) =>
      broker.localBus.on("$broker.error", (event: { error: Error; type: string }) => {
        if (event.type === "failedServiceRestart") reject(event.error);
      }),
    );
    broker.createService(gateway);
    await Promise.race([broker.waitForServices("gateway"), failed]);
  }
  phase = "running";
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
