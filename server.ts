import { ServiceBroker } from "moleculer";
import { brokerOptions } from "./moleculer.config";
import { loadConfig } from "./lib/config";
import { closeAllDatabases } from "./lib/db";
import { selectServices } from "./services";
import { startLocalMongo } from "./lib/local-mongo";

/**
 * Process entry point. Without MONGO_URL it starts the bundled MongoDB-compatible server with its data
 * under DATA_DIR, so `npm start` needs nothing else; in a cluster MONGO_URL points at the real database.
 */
async function main() {
  const config = loadConfig();
  let stopLocalMongo: (() => Promise<void>) | undefined;
  if (!config.mongoUrl) {
    const local = await startLocalMongo({ dataDir: `${config.dataDir}/mongo` });
    process.env.MONGO_URL = `${local.url}/agent_platform`;
    stopLocalMongo = local.stop;
  }

  const broker = new ServiceBroker(brokerOptions());
  for (const schema of selectServices(config.services)) broker.createService(schema);

  const shutdown = async (signal: string) => {
    broker.logger.info(`${signal} received, stopping`);
    await broker.stop();
    await closeAllDatabases();
    await stopLocalMongo?.();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  await broker.start();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
