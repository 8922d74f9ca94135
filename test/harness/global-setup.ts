import { startMongo, startNats, type RunningServer } from "./servers";

/** Starts NATS and the MongoDB-compatible server once for the whole run; workers read their URLs from env. */
export default async function globalSetup() {
  const [nats, mongo] = await Promise.all([startNats(), startMongo()]);
  process.env.TEST_NATS_URL = nats.url;
  process.env.TEST_MONGO_URL = mongo.url;
  process.env.ALLOW_LOOPBACK_TARGETS = "true";
  console.log(`\n[harness] NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}`);
  (globalThis as { __servers?: RunningServer[] }).__servers = [nats, mongo];
}
