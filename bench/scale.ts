import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import mongoose, { type Connection } from "mongoose";
import { databaseUrl, freePort } from "../test/harness/servers";
import { apiClient, signup } from "../test/harness/http";
import { ensureLocalMongoBuilt, startLocalMongo } from "../lib/local-mongo";
import { positiveIntEnv } from "../lib/env";
import { agentModel } from "../services/agents/model";
import { traitModel } from "../services/traits/model";
import { taskModel } from "../services/tasks/model";
import { knowledgeSourceModel } from "../services/knowledge/model";
import { searchModels } from "../services/search/model";
import { entityModel } from "../services/entities/model";
import { dropDatabase } from "./database";
import { runBench, type Lifecycle } from "./lifecycle";
import { measureLoad, type Measurement } from "./load";
import { startNode, waitForOk, type BenchProcess } from "./processes";
import { machine, writeResults } from "./report";

/**
 * Scale benchmark: a request's cost must follow the caller's own data, not the database's. Seeds one database
 * with ACCOUNTS accounts of RECORDS records of each kind (agents with traits, tasks, knowledge documents,
 * collected data records) straight through the project's models, plus an account holding one record of each,
 * and a second database holding only such a one-record account (the baseline). Then loads every list endpoint,
 * the agent directory, the collected data facets, stats and export, and GET by id, through the HTTP API of the
 * platform in one process (the `npm start` deployment), in the one-record and a RECORDS-record account, at 1 and
 * 32 connections, ROUNDS rounds in turn; the table shows medians.
 *
 * Runs on the embedded default (the local MongoDB-compatible server, started here) unless MONGO_URL is set (the
 * bench's two databases on it are dropped at the end). Env: BENCH_DURATION (s measured per run, default 5:
 * a p99 at 32 connections is the slowest 1% of the run, and requests in flight together are slow together, so over
 * 2 s a few bursts of the queue decided it: docs/adr/0034-data-layer-pass-5-agents-list-one-round.md),
 * BENCH_ROUNDS (3), BENCH_ACCOUNTS (100), BENCH_RECORDS (1000), BENCH_ENDPOINTS=lists (only the list endpoints).
 */

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "scale.json");

const ACCOUNTS = positiveIntEnv(process.env, "BENCH_ACCOUNTS", 100);
const RECORDS = positiveIntEnv(process.env, "BENCH_RECORDS", 1000);
const ROUNDS = positiveIntEnv(process.env, "BENCH_ROUNDS", 3);
const DURATION_SECONDS = positiveIntEnv(process.env, "BENCH_DURATION", 5);
const WARMUP_SECONDS = 1;
const CONNECTIONS = [1, 32];
/** Targets of the issue: list endpoints p50 < 10 ms at 1 connection, p99 < 100 ms at 32; the one-record account within 1.5x of the baseline. */
const TARGET = { p50Ms: 10, p99Ms: 100, maxRatioToBaseline: 1.5 } as const;
const PAGE = "limit=20";
const TRAITS_PER_ACCOUNT = 10;
/** Seeded records get ids far above what the platform's counters hand out during the bench. */
const SEEDED_ID_BASE = 10_000_000;
/** Accounts that exist only as seeded data (no user) take ids from here. */
const SEEDED_ACCOUNT_BASE = 1_000_000;
const INSERT_BATCH = 1000;
const STARTUP_TIMEOUT_MS = 120_000;
/** Requests slower than this fail the run (aggregations over 1,000 records at 32 connections queue for seconds). */
const REQUEST_TIMEOUT_SECONDS = 60;
/** Before each run, the server must answer a read by id this fast (the previous run's queue has drained)... */
const SETTLED_MS = 250;
/** ...or the run starts anyway after this long (a machine shared with other work may never be that fast). */
const SETTLE_TIMEOUT_MS = 30_000;
const CHILD_LOG_LEVEL = "warn";
const DAY_MS = 86_400_000;

/** One measured route; `list` marks the endpoints the issue's targets apply to. */
interface Endpoint {
  name: string;
  path: (ids: SeededIds) => string;
  list: boolean;
}

/** An account's seeded records the by-id routes read. */
interface SeededIds {
  agent: number;
  task: number;
  document: string;
  entity: number;
}

const ENDPOINTS: Endpoint[] = [
  { name: "GET /agents", path: () => `/api/v1/agents?${PAGE}`, list: true },
  { name: "GET /agents/directory", path: () => "/api/v1/agents/directory", list: true },
  { name: "GET /traits", path: () => `/api/v1/traits?${PAGE}`, list: true },
  { name: "GET /tools", path: () => `/api/v1/tools?${PAGE}`, list: true },
  { name: "GET /teams", path: () => `/api/v1/teams?${PAGE}`, list: true },
  { name: "GET /tasks", path: () => `/api/v1/tasks?${PAGE}`, list: true },
  { name: "GET /scheduled-tasks", path: () => `/api/v1/scheduled-tasks?${PAGE}`, list: true },
  { name: "GET /knowledge", path: () => `/api/v1/knowledge?${PAGE}`, list: true },
  { name: "GET /knowledge/documents", path: () => `/api/v1/knowledge/documents?${PAGE}`, list: true },
  { name: "GET /entities", path: () => `/api/v1/entities?${PAGE}`, list: true },
  { name: "GET /webhook-subscriptions", path: () => `/api/v1/webhook-subscriptions?${PAGE}`, list: true },
  { name: "GET /entities/facets", path: () => "/api/v1/entities/facets", list: false },
  { name: "GET /entities/stats", path: () => "/api/v1/entities/stats", list: false },
  { name: "GET /entities/export", path: () => "/api/v1/entities/export", list: false },
  { name: "GET /agents/{id}", path: (ids) => `/api/v1/agents/${ids.agent}`, list: false },
  { name: "GET /tasks/{id}", path: (ids) => `/api/v1/tasks/${ids.task}`, list: false },
  { name: "GET /knowledge/documents/{id}", path: (ids) => `/api/v1/knowledge/documents/${ids.document}`, list: false },
  { name: "GET /entities/{id}", path: (ids) => `/api/v1/entities/${ids.entity}`, list: false },
];

/** The endpoints this run measures. */
const MEASURED = process.env.BENCH_ENDPOINTS === "lists" ? ENDPOINTS.filter((e) => e.list) : ENDPOINTS;

/** The three situations each endpoint is measured in. */
const SITUATIONS = ["baseline", "one", "full"] as const;
type Situation = (typeof SITUATIONS)[number];
const SITUATION_LABEL: Record<Situation, string> = {
  baseline: "1-record account, empty database",
  one: "1-record account, full database",
  full: `${RECORDS}-record account, full database`,
};

/** A platform process and the account measured on it. */
interface Target {
  baseUrl: string;
  token: string;
  ids: SeededIds;
}

interface Row extends Measurement {
  endpoint: string;
  situation: Situation;
}

let nextSeededId = SEEDED_ID_BASE;
const seededId = () => nextSeededId++;

/** Inserts `docs` through `model` (validation and hooks included) in batches. */
async function insertAll(model: mongoose.Model<any>, docs: object[]): Promise<void> {
  for (let i = 0; i < docs.length; i += INSERT_BATCH) await model.insertMany(docs.slice(i, i + INSERT_BATCH));
}

/**
 * Seeds `records` records of each kind into one account, as the services would have written them: traits,
 * agents using them, tasks, a knowledge source with documents, collected data records of those agents.
 */
async function seedAccount(db: Connection, accountId: number, records: number): Promise<SeededIds> {
  const now = Date.now();
  const at = (i: number) => new Date(now - (records - i) * 60_000);
  const traits = Array.from({ length: Math.min(records, TRAITS_PER_ACCOUNT) }, (_, i) => ({
    _id: seededId(), account_id: accountId, name: `Trait ${i}`, identifier: `trait-${i}`, description: `Trait ${i} of the account`,
    category: i % 2 ? "tone" : "style", tags: ["seeded"],
  }));
  await insertAll(traitModel(db), traits);
  const agents = Array.from({ length: records }, (_, i) => ({
    _id: seededId(), account_id: accountId, name: `Agent ${i}`, identifier: `agent-${i}`, description: "A seeded agent.",
    instructions: `You are agent ${i}. Answer briefly and cite your sources.`, model: "gpt-4o-mini",
    trait_ids: traits.slice(0, 3).map((t) => t._id), configuration: { memory: true, retries: 2 },
    created_at: at(i), updated_at: at(i),
  }));
  await insertAll(agentModel(db), agents);
  await insertAll(taskModel(db), Array.from({ length: records }, (_, i) => ({
    _id: seededId(), account_id: accountId, title: `Task ${i}`, description: "Follow up with the customer.",
    status: i % 3 ? "pending" : "completed", agent_id: agents[i % agents.length]!._id, input: { ticket: i },
    created_at: at(i), updated_at: at(i),
  })));
  const [source] = await knowledgeSourceModel(db).insertMany([{
    _id: seededId(), account_id: accountId, name: "Handbook", identifier: "handbook", data_type: "website",
    paths: ["https://example.com/handbook"], loading_status: "loaded", document_count: records,
  }]);
  const { documents } = searchModels(db);
  await insertAll(documents, Array.from({ length: records }, (_, i) => ({
    _id: `doc-${accountId}-${i}`, account_id: accountId, source_id: source!._id, url: `https://example.com/handbook/${i}`,
    title: `Handbook page ${i}`, content: `Page ${i} of the handbook. `.repeat(20), content_hash: randomBytes(8).toString("hex"),
    chunk_size: 1000, chunk_overlap: 100, index_key: "seeded", index_state: "indexed", indexed_at: at(i),
  })));
  const entities = entityModel(db);
  await insertAll(entities, Array.from({ length: records }, (_, i) => {
    const agent = agents[i % agents.length]!;
    return {
      _id: seededId(), account_id: accountId, agent_id: agent._id, agent_name: agent.name, entity_type_name: i % 2 ? "Lead" : "Support request",
      status: ["new", "reviewed", "actioned"][i % 3], attributes: { name: `Customer ${i}`, email: `customer${i}@example.com`, budget: i * 10 },
      display_name: `Customer ${i}`, contact_email: `customer${i}@example.com`, created_at: new Date(now - (i % 20) * DAY_MS - i),
    };
  }));
  return { agent: agents[0]!._id, task: (await taskModel(db).findOne({ account_id: accountId }).lean())!._id, document: `doc-${accountId}-0`, entity: (await entities.findOne({ account_id: accountId }).lean())!._id };
}

/** Starts the platform in one process on `database`; resolves once it answers. */
async function startPlatform(mongoUrl: string, database: string, dataDir: string): Promise<{ baseUrl: string; proc: BenchProcess }> {
  const port = await freePort();
  const proc = startNode(database, SERVER_SCRIPT, {
    NODE_ENV: "production",
    JWT_SECRET: randomBytes(32).toString("hex"),
    LOG_LEVEL: CHILD_LOG_LEVEL,
    TRANSPORTER: "",
    SERVICES: "",
    MONGO_URL: databaseUrl(mongoUrl, database),
    PORT: String(port),
    MCP_PORT: "0",
    DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: "none",
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForOk(`${baseUrl}/health`, [proc], STARTUP_TIMEOUT_MS);
  return { baseUrl, proc };
}

/** Waits until the server answers a read by id within SETTLED_MS: requests a slow run left queued are done. */
async function settle(target: Target): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  const url = `${target.baseUrl}/api/v1/agents/${target.ids.agent}`;
  for (;;) {
    const start = performance.now();
    await fetch(url, { headers: { authorization: `Bearer ${target.token}` } }).then((res) => res.arrayBuffer());
    if (performance.now() - start < SETTLED_MS || Date.now() > deadline) return;
  }
}

/** Signs up an account through the API and returns its token and account id. */
async function account(baseUrl: string, name: string): Promise<{ token: string; accountId: number }> {
  const api = apiClient(baseUrl);
  const { token } = await signup(api, name);
  const me = await api("GET", "/api/v1/users/me", { token });
  return { token, accountId: me.body.account_id as number };
}

/** The median of the rounds that measured something (a run in which no request completed has NaN latencies). */
function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Per endpoint, situation and connection count, the median of each figure over the rounds. */
function medianRows(rounds: Row[][]): Row[] {
  return rounds[0]!.map((first) => {
    const same = rounds.map((round) => round.find((r) => r.endpoint === first.endpoint && r.situation === first.situation && r.connections === first.connections)!);
    return {
      ...first,
      requestsPerSecond: median(same.map((r) => r.requestsPerSecond)),
      p50Ms: median(same.map((r) => r.p50Ms)),
      p99Ms: median(same.map((r) => r.p99Ms)),
      totalRequests: same.reduce((sum, r) => sum + r.totalRequests, 0),
    };
  });
}

/** The verdicts of one endpoint at one connection count: the list targets, and the one-record account against the baseline. */
function verdicts(endpoint: Endpoint, rows: Row[], connections: number): string {
  const of = (s: Situation) => rows.find((r) => r.endpoint === endpoint.name && r.situation === s && r.connections === connections)!;
  const misses: string[] = [];
  if (endpoint.list) {
    for (const s of SITUATIONS) {
      const r = of(s);
      if (connections === 1 && r.p50Ms >= TARGET.p50Ms) misses.push(`p50 ${s}`);
      if (connections === 32 && r.p99Ms >= TARGET.p99Ms) misses.push(`p99 ${s}`);
    }
  }
  const base = of("baseline");
  const one = of("one");
  if (one.p50Ms > TARGET.maxRatioToBaseline * base.p50Ms) misses.push("p50 vs baseline");
  if (one.p99Ms > TARGET.maxRatioToBaseline * base.p99Ms) misses.push("p99 vs baseline");
  if (one.requestsPerSecond * TARGET.maxRatioToBaseline < base.requestsPerSecond) misses.push("req/s vs baseline");
  return misses.length ? `miss: ${misses.join(", ")}` : "ok";
}

function table(rows: Row[]): string {
  const cell = (r: Row) => `${Math.round(r.requestsPerSecond)} | ${r.p50Ms} | ${r.p99Ms}`;
  const lines = [
    `| endpoint | conn | ${SITUATIONS.map((s) => `${SITUATION_LABEL[s]}: req/s | p50 ms | p99 ms`).join(" | ")} | 1-record ÷ baseline p50 | targets |`,
    `|---|---:|${SITUATIONS.map(() => "---:|---:|---:|").join("")}---:|---|`,
  ];
  for (const endpoint of MEASURED) {
    for (const connections of CONNECTIONS) {
      const of = (s: Situation) => rows.find((r) => r.endpoint === endpoint.name && r.situation === s && r.connections === connections)!;
      const ratio = of("one").p50Ms / of("baseline").p50Ms;
      lines.push(`| ${endpoint.name} | ${connections} | ${SITUATIONS.map((s) => cell(of(s))).join(" | ")} | ${ratio.toFixed(2)} | ${verdicts(endpoint, rows, connections)} |`);
    }
  }
  return lines.join("\n");
}

/** The database server: MONGO_URL if set, else the embedded default on a temporary data directory. */
async function startDatabase({ own }: Lifecycle, databases: string[]): Promise<{ url: string; kind: string }> {
  const external = process.env.MONGO_URL;
  if (external) {
    for (const db of databases) own({ stop: () => dropDatabase(databaseUrl(external, db)) });
    return { url: external, kind: "MONGO_URL" };
  }
  ensureLocalMongoBuilt();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-scale-mongo-"));
  own({ stop: async () => rmSync(dataDir, { recursive: true, force: true }) });
  const local = own(await startLocalMongo({ dataDir }));
  return { url: local.url, kind: "embedded default (FerretDB over SQLite)" };
}

async function main(lifecycle: Lifecycle) {
  const host = machine();
  const run = randomBytes(3).toString("hex");
  const databases = { baseline: `bench_scale_empty_${run}`, full: `bench_scale_full_${run}` };
  const mongo = await startDatabase(lifecycle, Object.values(databases));
  const runs = ROUNDS * MEASURED.length * SITUATIONS.length * CONNECTIONS.length;
  const disarmWatchdog = lifecycle.startWatchdog(2 * STARTUP_TIMEOUT_MS + 30 * 60_000 + runs * (WARMUP_SECONDS + DURATION_SECONDS + 10) * 1000);
  const searchDir = mkdtempSync(path.join(os.tmpdir(), "bench-scale-data-"));
  lifecycle.own({ stop: async () => rmSync(searchDir, { recursive: true, force: true }) });

  console.error(`MongoDB (${mongo.kind}) ${mongo.url}; databases ${databases.baseline}, ${databases.full}`);
  const empty = await startPlatform(mongo.url, databases.baseline, path.join(searchDir, "baseline"));
  const full = await startPlatform(mongo.url, databases.full, path.join(searchDir, "full"));
  const emptyOne = await account(empty.baseUrl, "scale-one");
  const fullOne = await account(full.baseUrl, "scale-one");
  const fullMany = await account(full.baseUrl, "scale-many");

  const seedStart = Date.now();
  const emptyDb = await mongoose.createConnection(databaseUrl(mongo.url, databases.baseline)).asPromise();
  const fullDb = await mongoose.createConnection(databaseUrl(mongo.url, databases.full)).asPromise();
  const targets: Record<Situation, Target> = {
    baseline: { baseUrl: empty.baseUrl, token: emptyOne.token, ids: await seedAccount(emptyDb, emptyOne.accountId, 1) },
    one: { baseUrl: full.baseUrl, token: fullOne.token, ids: await seedAccount(fullDb, fullOne.accountId, 1) },
    full: { baseUrl: full.baseUrl, token: fullMany.token, ids: await seedAccount(fullDb, fullMany.accountId, RECORDS) },
  };
  for (let i = 1; i < ACCOUNTS; i++) {
    await seedAccount(fullDb, SEEDED_ACCOUNT_BASE + i, RECORDS);
    if (i % 10 === 0) console.error(`seeded ${i + 1}/${ACCOUNTS} accounts (${Math.round((Date.now() - seedStart) / 1000)} s)`);
  }
  await Promise.all([emptyDb.close(), fullDb.close()]);
  const seedSeconds = Math.round((Date.now() - seedStart) / 1000);
  console.error(`seeded in ${seedSeconds} s`);

  const procs = [empty.proc, full.proc];
  const guard = <T>(p: Promise<T>) => Promise.race([p, ...procs.map((x) => x.exited)]);
  const rounds: Row[][] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const rows: Row[] = [];
    for (const endpoint of MEASURED) {
      for (const situation of SITUATIONS) {
        const { baseUrl, token, ids } = targets[situation];
        for (const connections of CONNECTIONS) {
          await guard(settle(targets[situation]));
          const url = baseUrl + endpoint.path(ids);
          const load = { url, headers: { authorization: `Bearer ${token}` }, connections, timeout: REQUEST_TIMEOUT_SECONDS };
          const r = await guard(measureLoad(load, url, WARMUP_SECONDS, DURATION_SECONDS));
          console.error(`round ${round} ${endpoint.name} (${SITUATION_LABEL[situation]}) @ ${connections}: ${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`);
          rows.push({ endpoint: endpoint.name, situation, ...r });
        }
      }
    }
    rounds.push(rows);
  }
  disarmWatchdog();
  const rows = medianRows(rounds);
  const loadAfter = Number(os.loadavg()[0]!.toFixed(2));

  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; load average (1 min) ${host.loadAverage1mBefore} before, ` +
      `${loadAfter} after; bench client, platform and ${mongo.kind} share these cores`,
  );
  console.log(
    `full database: ${ACCOUNTS} accounts x ${RECORDS} agents (with traits), tasks, knowledge documents and collected data records, seeded in ${seedSeconds} s, ` +
      `plus a 1-record account; the baseline database holds only a 1-record account. Platform in one process (npm start); ` +
      `${WARMUP_SECONDS} s warm-up, ${DURATION_SECONDS} s measured; medians of ${ROUNDS} rounds. Targets (list endpoints): p50 < ${TARGET.p50Ms} ms at 1 connection, ` +
      `p99 < ${TARGET.p99Ms} ms at 32; every endpoint: the 1-record account within ${TARGET.maxRatioToBaseline}x of the baseline.\n`,
  );
  console.log(table(rows));
  writeResults(RESULTS_FILE, { date: new Date().toISOString(), machine: { ...host, loadAverage1mAfter: loadAfter }, mongo: mongo.kind, accounts: ACCOUNTS, records: RECORDS, rounds, medians: rows });
  console.log(`\nresults written to ${path.relative(ROOT, RESULTS_FILE)}`);
}

runBench(main);
