import { startMongoJava, type RunningServer } from "./servers";

/**
 * Global setup of the second-opinion project (jest.config.js): starts mongo-java-server once, only when a run
 * includes that project's specs; the common global teardown stops it with the other servers.
 */
export default async function secondOpinionSetup() {
  const server = await startMongoJava();
  process.env.TEST_SECOND_MONGO_URL = server.url;
  process.env.TEST_SECOND_MONGO_KIND = server.kind;
  console.log(`\n[harness] second opinion: MongoDB (${server.kind}) ${server.url} for the specs marked [mongo-java-server]`);
  ((globalThis as { __servers?: RunningServer[] }).__servers ??= []).push(server);
}
