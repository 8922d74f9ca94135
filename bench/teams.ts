import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { databaseUrl, freePort, startMongo, startNats } from "../test/harness/servers";
import { apiClient, signup } from "../test/harness/http";
import { dropDatabase } from "./database";
import { runBench, type Lifecycle } from "./lifecycle";
import type { Measurement } from "./load";
import { startNode, waitForOk, type BenchProcess } from "./processes";
import { machine, writeResults } from "./report";
import { AGENTS_PER_TEAM, CHANGED_AGENT_INDEX, teamDocument, TOOLS_PER_TEAM, TRAITS_PER_TEAM } from "./teams/document";
import { loadPaths, push, runJobs, summarize, type PushedTeam, type Stats } from "./teams/measure";
import { positiveIntEnv } from "../lib/env";

/**
 * Agents/teams benchmark: push throughput for a 20-agent team document, and GET /api/v1/agents/{id}
 * through the gateway over NATS. Starts its own nats-server and MongoDB-compatible server, a gateway
 * process and a process with the services push and the agent read need; loopback only, bounded in time.
 *
 * Env: BENCH_DURATION (s per GET run, default 10), BENCH_TEAMS (distinct teams pushed at concurrency 1,
 * default 10), BENCH_PUSHES (re-pushes per update/no-op run, default 20), BENCH_CPU_PROF=<dir> (children
 * write V8 CPU profiles there on exit), MONGO_URL (use that server instead; the bench's database on it is
 * dropped at the end).
 */

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "teams.json");

const HEALTH_PATH = "/health";
const AGENT_ROUTE = "/api/v1/agents/{id}";
const CONNECTIONS = [1, 32];
const PUSH_CONCURRENCY = 4;
/** Agents the GET load rotates over. */
const GET_AGENT_COUNT = 5;
const WARMUP_SECONDS = 2;
const DURATION_SECONDS = positiveIntEnv(process.env, "BENCH_DURATION", 10);
const DISTINCT_TEAMS = positiveIntEnv(process.env, "BENCH_TEAMS", 10);
const REPUSHES = positiveIntEnv(process.env, "BENCH_PUSHES", 20);
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
const STARTUP_TIMEOUT_MS = 60_000;
const RETRY_INTERVAL_MS = 200;
/** Hard bound on the run once NATS and mongo are up: startup, a generous 3 s per push, the GET runs, slack. */
const PUSH_COUNT = 4 + DISTINCT_TEAMS + Math.ceil(DISTINCT_TEAMS / PUSH_CONCURRENCY) * PUSH_CONCURRENCY + 7 * REPUSHES;
const RUN_BUDGET_MS = STARTUP_TIMEOUT_MS + PUSH_COUNT * 3_000 + (2 * CONNECTIONS.length + 1) * (WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 120_000;
const CHILD_LOG_LEVEL = "warn";
const PASSWORD = "correct-horse-battery-staple";

/** One measured push scenario. */
interface PushRow extends Stats {
  scenario: string;
  account: string;
  /** Agents in the account before the run (push loads all of them to plan). */
  accountAgents: number;
  /** Agents in the whole database before the run (what a server without usable indexes scans). */
  databaseAgents: number;
  concurrency: number;
  /** Agents created or rewritten per push, from the answers' updated_at (0 for a true no-op). */
  agentsWrittenPerPush: number;
  latenciesMs: number[];
}

interface GetRow extends Measurement {
  /** What the database held during the run. */
  database: string;
  /** Whether the agents in rotation are the database's oldest or newest. */
  agents: "oldest" | "newest";
  ids: number[];
}

/** Retries `attempt` until it succeeds, a process exits, or the startup timeout passes. */
async function whenReady<T>(procs: BenchProcess[], attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      return await Promise.race([attempt(), ...procs.map((p) => p.exited)]);
    } catch (err) {
      if (procs.some((p) => p.done) || Date.now() >= deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, RETRY_INTERVAL_MS));
  }
}

/** Agents of `now` that were created or rewritten since `before` (the same team's previous answer). */
function agentsWritten(before: PushedTeam | undefined, now: PushedTeam): number {
  const seen = new Map((before?.agents ?? []).map((a) => [a.id, a.updated_at]));
  return now.agents.filter((a) => seen.get(a.id) !== a.updated_at).length;
}

function checkTeam(team: PushedTeam, what: string): void {
  if (team.agents.length !== AGENTS_PER_TEAM) throw new Error(`${what}: expected ${AGENTS_PER_TEAM} agents, got ${team.agents.length}`);
}

/** What the bench has pushed into the database, over every account. */
const pushed = { teams: 0, agents: 0 };

/** The database's content as a label: agents, traits and tools over all accounts. */
const databaseLabel = () =>
  `${pushed.agents} agents, ${pushed.teams * TRAITS_PER_TEAM} traits, ${pushed.teams * TOOLS_PER_TEAM} tools in the database`;

/** The platform's state per account as the bench tracks it. */
class Account {
  agents = 0;
  readonly teams = new Map<string, PushedTeam>();
  constructor(readonly name: string, readonly token: string, readonly baseUrl: string) {}

  /** Pushes the document of `tag` and remembers the answer; returns latency and agents written. */
  async push(tag: string, doc: object): Promise<{ ms: number; written: number; team: PushedTeam }> {
    const { ms, team } = await push(this.baseUrl, this.token, doc);
    checkTeam(team, `push of team ${tag}`);
    const written = agentsWritten(this.teams.get(tag), team);
    if (!this.teams.has(tag)) {
      this.agents += team.agents.length;
      pushed.agents += team.agents.length;
      pushed.teams++;
    }
    this.teams.set(tag, team);
    return { ms, written, team };
  }

  /** Pushes `docs` (tag → document) with the given concurrency and summarizes the run. */
  async measure(scenario: string, docs: [string, object][], concurrency: number, expectWritten: number | null): Promise<PushRow> {
    const accountAgents = this.agents;
    const databaseAgents = pushed.agents;
    const written: number[] = [];
    const jobs = docs.map(([tag, doc]) => async () => {
      const r = await this.push(tag, doc);
      written.push(r.written);
      return r.ms;
    });
    const { latencies, wallMs } = await runJobs(jobs, concurrency);
    const agentsWrittenPerPush = Number((written.reduce((a, b) => a + b, 0) / written.length).toFixed(2));
    if (expectWritten !== null && written.some((w) => w !== expectWritten)) {
      throw new Error(`${scenario}: expected ${expectWritten} agents written per push, got ${written.join(",")}`);
    }
    const row = { scenario, account: this.name, accountAgents, databaseAgents, concurrency, agentsWrittenPerPush, ...summarize(latencies, wallMs), latenciesMs: latencies.map((l) => Number(l.toFixed(2))) };
    console.error(
      `${scenario} (${this.name} account, ${accountAgents}/${databaseAgents} agents, c=${concurrency}): ${row.perSecond} pushes/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${agentsWrittenPerPush} agents written/push`,
    );
    return row;
  }
}

const tags = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** `count` pushes of team `tag`, each changing agent CHANGED_AGENT_INDEX (revisions from..from+count-1). */
const updates = (tag: string, from: number, count: number): [string, object][] =>
  tags("", count).map((_, i) => [tag, teamDocument(tag, { revision: from + i })]);
/** `count` pushes of team `tag` at an unchanged revision. */
const unchanged = (tag: string, revision: number, count: number, password?: string): [string, object][] =>
  tags("", count).map(() => [tag, teamDocument(tag, { revision, password })]);

/** Small account (two teams, nothing else in the database yet): update, no-op, and a document with a password. */
async function smallAccountPushes(small: Account): Promise<PushRow[]> {
  // Warm-up (JIT, connection pools): the team main() created, re-pushed twice, not measured.
  await small.push("w0", teamDocument("w0"));
  await small.push("w0", teamDocument("w0"));
  const rows: PushRow[] = [];
  rows.push(await small.measure("update (1 agent changed)", updates("w0", 1, REPUSHES), 1, 1));
  rows.push(await small.measure("no-op (unchanged)", unchanged("w0", REPUSHES, REPUSHES), 1, 0));
  // A document that carries a publication password: push hashes it again on every push.
  await small.push("p0", teamDocument("p0", { password: PASSWORD }));
  rows.push(await small.measure("unchanged, 1 agent with publication password", unchanged("p0", 0, REPUSHES, PASSWORD), 1, null));
  return rows;
}

/**
 * Large account: distinct new teams at concurrency 1 and 4, then update/no-op against an account holding
 * them all; finally the small account's update/no-op again, now that the database is large.
 */
async function largeAccountPushes(small: Account, large: Account): Promise<PushRow[]> {
  const rows: PushRow[] = [];
  rows.push(await large.measure("first push (creates all)", tags("a", DISTINCT_TEAMS).map((t) => [t, teamDocument(t)]), 1, AGENTS_PER_TEAM));
  const concurrentTags = tags("b", Math.ceil(DISTINCT_TEAMS / PUSH_CONCURRENCY) * PUSH_CONCURRENCY);
  rows.push(await large.measure("first push (creates all)", concurrentTags.map((t) => [t, teamDocument(t)]), PUSH_CONCURRENCY, AGENTS_PER_TEAM));
  rows.push(await large.measure("update (1 agent changed)", updates("a0", 1, REPUSHES), 1, 1));
  rows.push(await large.measure("no-op (unchanged)", unchanged("a0", REPUSHES, REPUSHES), 1, 0));
  rows.push(await small.measure("update (1 agent changed)", updates("w0", REPUSHES + 1, REPUSHES), 1, 1));
  rows.push(await small.measure("no-op (unchanged)", unchanged("w0", 2 * REPUSHES, REPUSHES), 1, 0));

  // The updates really changed the one agent they should.
  const changed = large.teams.get("a0")!.agents[CHANGED_AGENT_INDEX]!;
  if (!changed.instructions?.includes(`Revision ${REPUSHES}.`)) throw new Error(`agent ${changed.name} does not carry the last revision`);
  return rows;
}

/**
 * GET /api/v1/agents/{id} over GET_AGENT_COUNT of the account's agents in rotation, at each connection
 * count: its oldest or its newest ones (a server that scans in insertion order finds the oldest first).
 */
async function getAgentLoad(baseUrl: string, account: Account, agents: "oldest" | "newest", connectionCounts: number[]): Promise<GetRow[]> {
  const all = [...account.teams.values()].flatMap((t) => t.agents.map((a) => a.id)).sort((a, b) => a - b);
  const ids = agents === "oldest" ? all.slice(0, GET_AGENT_COUNT) : all.slice(-GET_AGENT_COUNT);
  const paths = ids.map((id) => `/api/v1/agents/${id}`);
  const headers = { authorization: `Bearer ${account.token}` };
  const database = databaseLabel();
  const rows: GetRow[] = [];
  for (const connections of connectionCounts) {
    const r = await loadPaths(baseUrl, paths, headers, connections, WARMUP_SECONDS, DURATION_SECONDS);
    console.error(`GET ${AGENT_ROUTE} (${agents} agents; ${database}) @ ${connections}: ${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`);
    rows.push({ database, agents, ids, ...r });
  }
  return rows;
}

function pushTable(rows: PushRow[]): string {
  return [
    "| push | account | agents before: account / database | concurrency | pushes | pushes/s | p50 ms | p99 ms | max ms | agents written/push |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.account} | ${r.accountAgents} / ${r.databaseAgents} | ${r.concurrency} | ${r.count} | ${r.perSecond.toFixed(1)} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.agentsWrittenPerPush} |`,
    ),
  ].join("\n");
}

function getTable(rows: GetRow[]): string {
  return [
    "| database holding | agents in rotation | connections | req/s | p50 ms | p99 ms | requests |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.database} | ${r.agents} ${GET_AGENT_COUNT} (ids ${r.ids[0]}–${r.ids[r.ids.length - 1]}) | ${r.connections} | ${Math.round(r.requestsPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.totalRequests} |`),
  ].join("\n");
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  const mongo = own(await startMongo());
  const disarmWatchdog = startWatchdog(RUN_BUDGET_MS);

  const run = randomBytes(3).toString("hex");
  const database = `bench_teams_${run}`;
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  // A server the bench did not start (MONGO_URL) outlives it: its database is dropped at the end.
  if (mongo.kind === "MONGO_URL") own({ stop: () => dropDatabase(databaseUrl(mongo.url, database)) });
  const shared = {
    NODE_ENV: "production",
    JWT_SECRET: randomBytes(32).toString("hex"),
    LOG_LEVEL: CHILD_LOG_LEVEL,
    TRANSPORTER: nats.url,
    NAMESPACE: `bench-teams-${run}`,
    MONGO_URL: databaseUrl(mongo.url, database),
    PORT: String(port),
  };
  const profile = (name: string): Record<string, string> => {
    if (!CPU_PROF_DIR) return {};
    mkdirSync(CPU_PROF_DIR, { recursive: true });
    return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${CPU_PROF_DIR} --cpu-prof-name=${name}-${run}.cpuprofile`.trim() };
  };
  const serviceList = "users,api-keys,agents,tools,traits,teams";
  console.error(`NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}, database ${database}; gateway on ${baseUrl}`);
  const procs = [
    startNode("gateway", SERVER_SCRIPT, { ...shared, SERVICES: "gateway", ...profile("gateway") }),
    startNode("services", SERVER_SCRIPT, { ...shared, SERVICES: serviceList, ...profile("services") }),
  ];
  const api = apiClient(baseUrl);
  await waitForOk(baseUrl + HEALTH_PATH, procs, STARTUP_TIMEOUT_MS);
  const small = new Account("small", (await whenReady(procs, () => signup(api, "bench-small"))).token, baseUrl);
  const large = new Account("large", (await whenReady(procs, () => signup(api, "bench-large"))).token, baseUrl);
  // The gateway may learn the teams service's routes a moment after the users service's.
  await whenReady(procs, () => small.push("w0", teamDocument("w0")));

  const guard = <T>(p: Promise<T>) => Promise.race([p, ...procs.map((x) => x.exited)]);
  const pushRows = await guard(smallAccountPushes(small));
  const getRows = await guard(getAgentLoad(baseUrl, small, "oldest", CONNECTIONS));
  pushRows.push(...(await guard(largeAccountPushes(small, large))));
  getRows.push(...(await guard(getAgentLoad(baseUrl, small, "oldest", CONNECTIONS))));
  // The database's newest agents, at one connection only: on the local server each read scans the agents collection.
  getRows.push(...(await guard(getAgentLoad(baseUrl, large, "newest", [1]))));
  disarmWatchdog();
  const loadAfter = Number(os.loadavg()[0]!.toFixed(2));

  const docBytes = Buffer.byteLength(JSON.stringify(teamDocument("a0")));
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; load average (1 min) ${host.loadAverage1mBefore} before, ` +
      `${loadAfter} after; bench client, gateway, services, nats-server and ${mongo.kind} share these cores`,
  );
  console.log(
    `document: ${AGENTS_PER_TEAM} agents, ${TRAITS_PER_TEAM} traits, ${TOOLS_PER_TEAM} tools, 2 knowledge entries, overrides; ${(docBytes / 1024).toFixed(1)} KiB JSON. ` +
      `Pushes are sequential POST /api/v1/teams/push unless concurrency > 1; p99 of ${REPUSHES} or fewer samples is close to the max.\n`,
  );
  console.log(pushTable(pushRows));
  const first = pushRows.find((r) => r.scenario.startsWith("first") && r.concurrency === 1)!;
  console.log(
    `\nfirst push at concurrency 1, in order: ${first.latenciesMs.map((l) => Math.round(l)).join(", ")} ms (the account grows by ${AGENTS_PER_TEAM} agents per push)`,
  );
  console.log(
    `\nGET ${AGENT_ROUTE} (gateway → NATS → agents): ${GET_AGENT_COUNT} agents in rotation, Bearer JWT of their account; ` +
      `${WARMUP_SECONDS} s warm-up, ${DURATION_SECONDS} s measured; before and after the large account's pushes\n`,
  );
  console.log(getTable(getRows));
  writeResults(RESULTS_FILE, {
    date: new Date().toISOString(),
    machine: { ...host, loadAverage1mAfter: loadAfter },
    deployment: { gateway: "gateway", services: serviceList, transporter: "NATS", mongo: mongo.kind },
    document: { agents: AGENTS_PER_TEAM, bytes: docBytes },
    push: pushRows,
    getAgent: { route: AGENT_ROUTE, agentsInRotation: GET_AGENT_COUNT, warmupSeconds: WARMUP_SECONDS, durationSeconds: DURATION_SECONDS, rows: getRows },
  });
  console.log(`\nresults written to ${path.relative(ROOT, RESULTS_FILE)}`);
}

runBench(main);
