import { startMongo, startNats, startTypesense, type RunningServer } from "./servers";

/**
 * Starts NATS, the MongoDB-compatible server and Typesense once for the whole run; workers read their URLs
 * from env (the one way Jest hands values from its global setup to the workers; settings go in test/harness/env.ts). Typesense goes to TEST_TYPESENSE_* (not TYPESENSE_URL, which would switch every test cluster's
 * search service to it): the contract suite and the Typesense cluster test use it by name.
 */
export default async function globalSetup() {
  const [nats, mongo, typesense] = await Promise.all([startNats(), startMongo(), startTypesense()]);
  process.env.TEST_NATS_URL = nats.url;
  process.env.TEST_MONGO_URL = mongo.url;
  process.env.TEST_TYPESENSE_URL = typesense.url;
  process.env.TEST_TYPESENSE_API_KEY = typesense.apiKey;
  console.log(`\n[harness] NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}; Typesense (${typesense.kind}) ${typesense.url}`);
  process.env.TEST_MONGO_KIND = mongo.kind;
  ((globalThis as { __servers?: RunningServer[] }).__servers ??= []).push(nats, mongo, typesense);
}
