import { randomBytes } from "node:crypto";
import path from "node:path";
import { databaseUrl, freePort, startMongo, startNats } from "../test/harness/servers";
import { apiClient, signup } from "../test/harness/http";
import { CEILING_PATH } from "./ceiling";
import { runBench, type Lifecycle } from "./lifecycle";
import { measure } from "./load";
import { startNode, stopAll, waitForOk, type BenchProcess } from "./processes";
import { compareToCeiling, machine, markdownTable, medianRows, ratioOf, targetVerdict, TARGET, writeResults, type Row } from "./report";
import { positiveIntEnv } from "../lib/env";
import { eventsTable, measureEvents, type EventRow } from "./events";

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const CEILING_SCRIPT = path.join(__dirname, "ceiling.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "http-auth.json");

const ROUTE = "/api/v1/users/me";
const HEALTH_PATH = "/health";
const CONNECTIONS = [1, 32];
const WARMUP_SECONDS = 2;
const DURATION_SECONDS = positiveIntEnv(process.env, "BENCH_DURATION", 6);
/**
 * The deployments are measured in turn, this many rounds; the table shows medians, and each ratio is taken
 * within a round, so a machine that drifts (2 shared cores) skews ceiling and scenario alike.
 */
const ROUNDS = positiveIntEnv(process.env, "BENCH_ROUNDS", 3);
const STARTUP_TIMEOUT_MS = 60_000;
const RETRY_INTERVAL_MS = 200;
/** Hard bound on the run once NATS and mongo are up: every startup and every load run, plus slack. */
const RUN_BUDGET_MS = ROUNDS * 3 * STARTUP_TIMEOUT_MS + ROUNDS * 3 * CONNECTIONS.length * (WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 60_000;
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

/** A started deployment: where to send load and with which credentials. */
interface Running {
  scenario: Scenario;
  url: string;
  headers: Record<string, string>;
  procs: BenchProcess[];
}

/** Starts a scenario's processes and waits until its route answers (signing up first when it needs a token). */
async function startScenario(scenario: Scenario): Promise<Running> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  console.error(`${scenario.name}: starting ${scenario.processes.map((p) => p.name).join(" + ")} on ${baseUrl}`);
  const procs = scenario.processes.map((p) => startNode(p.name, p.script, { ...p.env, PORT: String(port) }));
  let headers: Record<string, string> = {};
  if (scenario.authenticated) {
    await waitForOk(baseUrl + HEALTH_PATH, procs, STARTUP_TIMEOUT_MS);
    headers = { authorization: `Bearer ${await signupWhenReady(baseUrl, procs)}` };
  }
  await waitForOk(baseUrl + scenario.path, procs, STARTUP_TIMEOUT_MS, headers);
  return { scenario, url: baseUrl + scenario.path, headers, procs };
}

/**
 * One round: each deployment started, measured at every connection count, and stopped before the next starts,
 * so nothing of one scenario (the embedded process's pollers, its database sessions) runs under another's load.
 */
async function measureRound(list: Scenario[], round: number) {
  const results = [];
  for (const scenario of list) {
    try {
      const d = await startScenario(scenario);
      for (const connections of CONNECTIONS) {
        const m = await Promise.race([measure(d.url, d.headers, connections, WARMUP_SECONDS, DURATION_SECONDS), ...d.procs.map((p) => p.exited)]);
        console.error(`round ${round} ${scenario.name} @ ${connections}: ${Math.round(m.requestsPerSecond)} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms`);
        results.push({ scenario: scenario.name, ...m });
      }
    } finally {
      await stopAll();
    }
  }
  return results;
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  const mongo = own(await startMongo());
  console.error(`NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}`);
  const disarmWatchdog = startWatchdog(RUN_BUDGET_MS);

  const rounds: Row[][] = [];
  const list = scenarios(nats.url, mongo.url);
  for (let round = 1; round <= ROUNDS; round++) rounds.push(compareToCeiling(await measureRound(list, round)));
  disarmWatchdog();

  const rows = medianRows(rounds);
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; ` +
      `load average ${host.loadAverage1mBefore} before the run; autocannon shares these cores`,
  );
  console.log(
    `route: GET ${ROUTE} (Bearer JWT), ceiling GET ${CEILING_PATH}; ${ROUNDS} rounds, each deployment started and measured in turn, ` +
      `${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s measured each; medians of the rounds, ratios taken within each round\n`,
  );
  console.log(markdownTable(rows));
  console.log(`\n${targetVerdict(rows)}`);
  console.log(`${TARGET.scenario} @ ${TARGET.connections} ratio per round: ${rounds.map((r) => ratioOf(r).toFixed(2)).join(", ")}`);
  writeResults(RESULTS_FILE, {
    date: new Date().toISOString(),
    machine: host,
    route: ROUTE,
    warmupSeconds: WARMUP_SECONDS,
    durationSeconds: DURATION_SECONDS,
    rounds,
    target: TARGET,
    rows,
  });
  console.log(`results written to ${path.relative(ROOT, RESULTS_FILE)}`);

  // Durable events: end-to-end throughput with one and two webhooks replicas (median of the rounds).
  const eventRounds: EventRow[][] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const rowsOfRound: EventRow[] = [];
    for (const replicas of [1, 2]) {
      const row = await measureEvents(SERVER_SCRIPT, nats.url, mongo.url, replicas);
      console.error(`round ${round} events, ${replicas} webhooks replica(s): ${row.createsPerSecond} creates/s, ${row.eventsPerSecond} events/s end to end`);
      rowsOfRound.push(row);
    }
    eventRounds.push(rowsOfRound);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const eventRows = eventRounds[0]!.map((row, i) => ({
    ...row,
    createsPerSecond: median(eventRounds.map((r) => r[i]!.createsPerSecond)),
    eventsPerSecond: median(eventRounds.map((r) => r[i]!.eventsPerSecond)),
  }));
  console.log(`\nevents: agent.created to a local webhook receiver, over NATS; medians of ${ROUNDS} rounds\n`);
  console.log(eventsTable(eventRows));
}

runBench(main);
