import { startMongo, startNats, type RunningServer } from "../test/harness/servers";

/**
 * Starts NATS and the local MongoDB-wire server for a bench that runs the platform in its own process (the test
 * harness's startCluster), and sets the environment it reads: those servers, loopback fixture sites allowed, quiet
 * logs, no MCP port or search snapshots; `env` adds the bench's own settings. Stop the servers it returns.
 */
export async function startInProcessServers(env: Record<string, string>): Promise<RunningServer[]> {
  const [nats, mongo] = await Promise.all([startNats(), startMongo()]);
  Object.assign(process.env, {
    TEST_NATS_URL: nats.url,
    TEST_MONGO_URL: mongo.url,
    ALLOW_LOOPBACK_TARGETS: "true",
    LOG_LEVEL: "warn",
    TEST_LOG_LEVEL: "warn",
    MCP_PORT: "0",
    MCP_HOST: "127.0.0.1",
    SEARCH_SNAPSHOTS: "off",
    ...env,
  });
  return [nats, mongo];
}
