import { randomBytes } from "node:crypto";
import path from "node:path";
import { databaseUrl, freePort, startMongo, startNats } from "../test/harness/servers";
import { apiClient, signup } from "../test/harness/http";
import { CEILING_PATH } from "./ceiling";
import { runBench, type Lifecycle } from "./lifecycle";
import { measure } from "./load";
import { startNode, stopAll, waitForOk, type BenchProcess } from "./processes";
import { compareToCeiling, machine, markdownTable, targetVerdict, TARGET, writeResults } from "./report";
import { positiveIntEnv } from "./env";

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const CEILING_SCRIPT = path.join(__dirname, "ceiling.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "http-auth.json");

const ROUTE = "/api/v1/users/me";
const HEALTH_PATH = "/health";
const CONNECTIONS = [1, 32];
const WARMUP_SECONDS = 2;
const DURATION_SECONDS = positiveIntEnv("BENCH_DURATION", 10);
const STARTUP_TIMEOUT_MS = 60_000;
const RETRY_INTERVAL_MS = 200;
/** Hard bound on the run once NATS and mongo are up: every startup and every load run, plus slack. */
const RUN_BUDGET_MS = 3 * STARTUP_TIMEOUT_MS + 3 * CONNECTIONS.length * (WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 60_000;
/** Child processes log only warnings, as a loaded production deployment would. */
const CHILD_LOG_LEVEL = "warn";

interface ProcessSpec {
  name: string;
  script: string;
  env: Record<string, string>;
}

/** One deployment to load: its processes (the first serves HTTP) and the route to hit. */
interface Scenario {
  name: string;
  processes: ProcessSpec[];
  path: string;
  authenticated: boolean;
}

function scenarios(natsUrl: string, mongoUrl: string): Scenario[] {
  const platform = { NODE_ENV: "production", JWT_SECRET: randomBytes(32).toString("hex"), LOG_LEVEL: CHILD_LOG_LEVEL };
  const nats = { ...platform, TRANSPORTER: natsUrl, NAMESPACE: `bench-${randomBytes(3).toString("hex")}`, MONGO_URL: databaseUrl(mongoUrl, "bench_nats") };
  return [
    {
      name: "ceiling",
      processes: [{ name: "ceiling", script: CEILING_SCRIPT, env: platform }],
      path: CEILING_PATH,
      authenticated: false,
    },
    {
      name: "embedded",
      processes: [{ name: "embedded", script: SERVER_SCRIPT, env: { ...platform, TRANSPORTER: "", SERVICES: "", MONGO_URL: databaseUrl(mongoUrl, "bench_embedded") } }],
      path: ROUTE,
      authenticated: true,
    },
    {
      name: "nats",
      processes: [
        { name: "nats gateway", script: SERVER_SCRIPT, env: { ...nats, SERVICES: "gateway" } },
        { name: "nats users", script: SERVER_SCRIPT, env: { ...nats, SERVICES: "users,api-keys" } },
      ],
      path: ROUTE,
      authenticated: true,
    },
  ];
}

/** Signs up a fresh account, retrying while the gateway has not yet discovered the users service. */
async function signupWhenReady(baseUrl: string, procs: BenchProcess[]): Promise<string> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      return (await Promise.race([signup(apiClient(baseUrl), "bench"), ...procs.map((p) => p.exited)])).token;
    } catch (err) {
      if (procs.some((p) => p.done) || Date.now() >= deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, RETRY_INTERVAL_MS));
  }
}

/** Starts a scenario's processes, waits until its route answers, measures it at each connection count, stops it. */
async function runScenario(scenario: Scenario) {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  console.error(`${scenario.name}: starting ${scenario.processes.map((p) => p.name).join(" + ")} on ${baseUrl}`);
  const procs = scenario.processes.map((p) => startNode(p.name, p.script, { ...p.env, PORT: String(port) }));
  try {
    let headers: Record<string, string> = {};
    if (scenario.authenticated) {
      await waitForOk(baseUrl + HEALTH_PATH, procs, STARTUP_TIMEOUT_MS);
      headers = { authorization: `Bearer ${await signupWhenReady(baseUrl, procs)}` };
    }
    await waitForOk(baseUrl + scenario.path, procs, STARTUP_TIMEOUT_MS, headers);
    const results = [];
    for (const connections of CONNECTIONS) {
      const m = await Promise.race([
        measure(baseUrl + scenario.path, headers, connections, WARMUP_SECONDS, DURATION_SECONDS),
        ...procs.map((p) => p.exited),
      ]);
      console.error(`${scenario.name} @ ${connections}: ${Math.round(m.requestsPerSecond)} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms`);
      results.push({ scenario: scenario.name, ...m });
    }
    return results;
  } finally {
    await stopAll();
  }
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  const mongo = own(await startMongo());
  console.error(`NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}`);
  const disarmWatchdog = startWatchdog(RUN_BUDGET_MS);

  const measured = [];
  for (const scenario of scenarios(nats.url, mongo.url)) measured.push(...(await runScenario(scenario)));
  disarmWatchdog();

  const rows = compareToCeiling(measured);
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; ` +
      `load average ${host.loadAverage1mBefore} before the run; autocannon shares these cores`,
  );
  console.log(`route: GET ${ROUTE} (Bearer JWT), ceiling GET ${CEILING_PATH}; ${WARMUP_SECONDS} s warm-up, ${DURATION_SECONDS} s measured\n`);
  console.log(markdownTable(rows));
  console.log(`\n${targetVerdict(rows)}`);
  writeResults(RESULTS_FILE, {
    date: new Date().toISOString(),
    machine: host,
    route: ROUTE,
    warmupSeconds: WARMUP_SECONDS,
    durationSeconds: DURATION_SECONDS,
    target: TARGET,
    rows,
  });
  console.log(`results written to ${path.relative(ROOT, RESULTS_FILE)}`);
}

runBench(main);
