import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { databaseUrl, freePort, startNats } from "../test/harness/servers";
import { apiClient } from "../test/harness/http";
import { ensureLocalMongoBuilt, startLocalMongo } from "../lib/local-mongo";
import { numberEnv, positiveIntEnv } from "../lib/env";
import { runBench, type Lifecycle } from "./lifecycle";
import { measure, measureLoad, type Measurement } from "./load";
import { signupWhenReady, startNode, stopAll, waitForOk, type BenchProcess } from "./processes";
import { machine, median, medianFields, writeResults } from "./report";

/**
 * The write path and its events (issue 29, docs/adr/0050-write-path-speed.md): creates/s (POST /api/v1/tools,
 * each with its tool.created event) at 1, 8 and 32 clients, those at 32 in turn with authenticated reads at 32
 * (medians of PAIR_ROUNDS each), then 32-client bursts of creates with a webhook subscription on a loopback receiver,
 * each timed to its last delivery, with one and with two webhooks replicas in BURST_ROUNDS rounds (medians of each,
 * and two's ratios to one within rounds), then such rounds with the receiver answering after SLOW_RECEIVER_MS;
 * CPU from /proc for every process of the deployment, the database server included.
 * On the embedded default (one process holding every service; the second replica is a process of only the
 * webhooks service on the same database) and over NATS (the API in one process, webhooks replicas beside it).
 */

const ROOT = path.resolve(__dirname, "..", "..");
const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "writes.json");
/** Creates measured once each at these clients; at READ_CLIENTS they are measured in turn with the reads. */
const CREATE_CLIENTS = [1, 8];
const READ_CLIENTS = 32;
const BURST_CLIENTS = 32;
const WARMUP_SECONDS = 1;
const DURATION_SECONDS = positiveIntEnv(process.env, "BENCH_DURATION", 5);
const BURST_SECONDS = positiveIntEnv(process.env, "BENCH_BURST_SECONDS", 5);
/**
 * Creates before each burst, whose deliveries all arrive before it starts: a replica started for the burst runs its
 * hot paths optimised by then, as a replica that has been running does (one second left it mostly unoptimised code).
 */
const BURST_WARMUP_SECONDS = positiveIntEnv(process.env, "BENCH_BURST_WARMUP", 5);
/**
 * Rounds of bursts, each one burst with one replica and one with two, in turn (1-2, then 2-1, so neither count always
 * runs second); the table shows the medians, the target judges the ratios within rounds (the machine's speed drifts).
 */
const BURST_ROUNDS = positiveIntEnv(process.env, "BENCH_BURST_ROUNDS", 4);
/**
 * Then rounds of bursts to a receiver that answers after SLOW_RECEIVER_MS, as a real endpoint does: deliveries are
 * bound by the receiver's latency and each replica's WEBHOOK_CONCURRENCY, not by the cores, which is the load a second
 * replica is for. On a loopback receiver that answers at once, deliveries keep up with the creates, so events/s are
 * the creates' rate whatever the replicas (docs/adr/0063-one-replica-takes-the-wakes.md).
 */
const SLOW_ROUNDS = numberEnv(process.env, "BENCH_SLOW_ROUNDS", 2, { min: 0, integer: true });
const SLOW_RECEIVER_MS = positiveIntEnv(process.env, "BENCH_SLOW_RECEIVER_MS", 100);
/**
 * Reads and creates at 32 clients measured in turn this many times, each ratio taken within its pair: the machine's
 * speed drifts by a fifth between minutes, which decided a ratio of two phases measured once each.
 */
const PAIR_ROUNDS = positiveIntEnv(process.env, "BENCH_PAIR_ROUNDS", 3);
const STARTUP_TIMEOUT_MS = 60_000;
/**
 * A replica started for a burst has settled once SETTLE_WINDOW_MS of it costs at most SETTLED_CPU_MS. An idle
 * webhooks process (its database's indexes made) spent 20 ms of CPU a second 5-10 s after its start, 17 at 10-20 s
 * and about 5 from then on: its background threads compiling and collecting what the start left. Waiting a fixed 3 s,
 * that tail fell in the burst, counted as a cost of a second replica.
 */
const SETTLE_WINDOW_MS = 5_000;
const SETTLED_CPU_MS = 30;
const SETTLE_TIMEOUT_MS = 60_000;
const DRAIN_TIMEOUT_MS = 120_000;
/** Which deployments to measure (BENCH_DEPLOYMENTS=nats repeats one quickly); both by default. */
const DEPLOYMENTS = (process.env.BENCH_DEPLOYMENTS ?? "embedded,nats").split(",").filter((name): name is "embedded" | "nats" => name === "embedded" || name === "nats");
/** Targets of issue 29. */
const TARGET = { createsToReads: 0.2, p50OneClientMs: 3, drainMs: 5_000 } as const;
const CLOCK_TICK_MS = 1000 / 100; // USER_HZ, 100 on Linux

/** CPU milliseconds (user + system) a process has used so far, from /proc/<pid>/stat; 0 once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS; // utime and stime: fields 14 and 15
  } catch {
    return 0;
  }
}
const cpuOf = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMs(pid), 0);

/**
 * A receiver that answers 204 after `delayMs` (0 unless a burst sets it) and notes when each delivery arrived, and
 * which webhook-ids came more than once.
 */
async function startReceiver() {
  let arrivals: number[] = [];
  let seen = new Set<string>();
  let repeated = 0;
  let delayMs = 0;
  const server = http.createServer((req, res) => {
    req.resume().on("end", () => {
      const id = String(req.headers["webhook-id"]);
      const answer = () => {
        arrivals.push(Date.now());
        if (seen.has(id)) repeated++;
        seen.add(id);
        res.writeHead(204).end();
      };
      if (delayMs) setTimeout(answer, delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`,
    get count() {
      return arrivals.length;
    },
    get last() {
      return arrivals[arrivals.length - 1] ?? 0;
    },
    /** Deliveries since the last reset whose webhook-id had come before (at least once allows them). */
    get repeated() {
      return repeated;
    },
    reset: () => void ((arrivals = []), (seen = new Set()), (repeated = 0)),
    answerAfter: (ms: number) => void (delayMs = ms),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

interface Deployment {
  name: string;
  base: string;
  token: string;
  procs: BenchProcess[];
  /**
   * Starts one more process of only the webhooks service beside the deployment (among `procs`, so its CPU counts)
   * and waits the time a start takes; returns what stops it and takes it out of `procs`.
   */
  addWebhooksReplica(): Promise<() => Promise<void>>;
}

/** Starts a deployment on a fresh database and signs up its account. */
async function startDeployment(name: "embedded" | "nats", natsUrl: string, mongoUrl: string): Promise<Deployment> {
  const port = await freePort();
  const env = {
    NODE_ENV: "production",
    JWT_SECRET: randomBytes(32).toString("hex"),
    LOG_LEVEL: "warn",
    MONGO_URL: databaseUrl(mongoUrl, `bench_writes_${name}_${randomBytes(3).toString("hex")}`),
    ALLOW_LOOPBACK_TARGETS: "true",
    MCP_PORT: "0",
    ...(name === "nats" ? { TRANSPORTER: natsUrl, NAMESPACE: `bench-writes-${randomBytes(3).toString("hex")}` } : { TRANSPORTER: "" }),
  };
  const procs =
    name === "nats"
      ? [
          startNode("nats api", SERVER_SCRIPT, { ...env, PORT: String(port), SERVICES: "gateway,users,api-keys,tools" }),
          startNode("nats webhooks 1", SERVER_SCRIPT, { ...env, PORT: "0", SERVICES: "webhooks" }),
        ]
      : [startNode("embedded", SERVER_SCRIPT, { ...env, PORT: String(port), SERVICES: "" })];
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/health`, procs, STARTUP_TIMEOUT_MS);
  const api = apiClient(base);
  const token = await signupWhenReady(api, "bench-writes", STARTUP_TIMEOUT_MS);
  // Over NATS the webhooks service answers once its replica has joined.
  await waitForOk(`${base}/api/v1/webhook-subscriptions`, procs, STARTUP_TIMEOUT_MS, { authorization: `Bearer ${token}` });
  // Either deployment runs one webhooks replica already (the embedded process, or "nats webhooks 1").
  async function addWebhooksReplica(): Promise<() => Promise<void>> {
    const replica = startNode(`${name} webhooks ${procs.length + 1}`, SERVER_SCRIPT, { ...env, PORT: "0", SERVICES: "webhooks" });
    procs.push(replica);
    const stop = async () => {
      await replica.stop();
      procs.splice(procs.indexOf(replica), 1);
    };
    // A replica of only the webhooks service has no HTTP port to wait on: it is up once its start has settled.
    const started = Date.now();
    for (let used = Infinity; used > SETTLED_CPU_MS && Date.now() - started < SETTLE_TIMEOUT_MS; ) {
      const before = cpuMs(replica.pid);
      await Promise.race([new Promise((r) => setTimeout(r, SETTLE_WINDOW_MS)), replica.exited]);
      used = cpuMs(replica.pid) - before;
    }
    console.error(`${name}: webhooks replica ${procs.length} settled after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return stop;
  }
  return { name, base, token, procs, addWebhooksReplica };
}

/** POST /api/v1/tools with a unique identifier per request, at `connections`. */
function measureCreates(d: Deployment, connections: number, seconds: number, warmupSeconds: number): Promise<Measurement> {
  let n = 0;
  const prefix = randomBytes(3).toString("hex");
  return measureLoad(
    {
      url: `${d.base}/api/v1/tools`,
      connections,
      headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
      requests: [
        {
          method: "POST",
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: "bench tool", identifier: `t-${prefix}-${n++}` }) }),
        },
      ],
    },
    "POST /api/v1/tools",
    warmupSeconds,
    seconds,
  );
}

interface CreateRow extends Measurement {
  cpuMsPerCreate: number;
}
interface EventRow {
  replicas: number;
  /** How long the receiver took to answer each delivery. */
  receiverMs: number;
  /** Bursts measured; the other fields are their medians, the counts their sums. */
  bursts?: number;
  creates: number;
  createsPerSecond: number;
  delivered: number;
  /** Of those, deliveries of a webhook-id that had arrived already. */
  repeated: number;
  /** Deliveries from the burst's first create to its last delivery, per second. */
  eventsPerSecond: number;
  /** From the burst's last create to its last delivery. */
  drainMs: number;
  cpuMsPerEvent: number;
}
interface ReplicaRatio {
  eventsPerSecond: number;
  cpuMsPerEvent: number;
}
interface DeploymentResult {
  name: string;
  /** The median of the paired rounds' reads (and the creates at 32 among `creates`). */
  reads: Measurement;
  creates: CreateRow[];
  /** Creates at 32 ÷ reads at 32, per paired round. */
  ratios: number[];
  /** Per receiver latency and replica count, the medians of its bursts. */
  events: EventRow[];
  /** Per round, two replicas' events/s and CPU per event, each as a ratio to one replica's in the same round. */
  replicaRatios: ReplicaRatio[];
  /** The same with the receiver answering after SLOW_RECEIVER_MS. */
  slowReplicaRatios: ReplicaRatio[];
  /** Every burst, in the order run. */
  bursts: EventRow[];
}

/** A burst of creates at BURST_CLIENTS for BURST_SECONDS, then waits until the receiver has every delivery. */
async function burst(d: Deployment, receiver: Receiver, pids: () => number[], cpuPerCreate: number, replicas: number, receiverMs: number): Promise<EventRow> {
  receiver.reset();
  receiver.answerAfter(receiverMs);
  const before = await toolCount(d);
  const cpuBefore = cpuOf(pids());
  const started = Date.now();
  await Promise.race([measureCreates(d, BURST_CLIENTS, BURST_SECONDS, 0), ...d.procs.map((p) => p.exited)]);
  const created = Date.now();
  const creates = (await toolCount(d)) - before;
  await allDelivered(d, receiver, creates);
  receiver.answerAfter(0);
  const cpu = cpuOf(pids()) - cpuBefore;
  const delivered = receiver.count;
  return {
    replicas,
    receiverMs,
    creates,
    createsPerSecond: (creates * 1000) / (created - started),
    delivered,
    repeated: receiver.repeated,
    eventsPerSecond: (delivered * 1000) / (receiver.last - started),
    drainMs: Math.max(0, receiver.last - created),
    cpuMsPerEvent: Math.max(0, cpu - creates * cpuPerCreate) / delivered,
  };
}

/**
 * How many tools the deployment's account has: each create is one tool.created event, one delivery. Counted in
 * the database, since autocannon's own count leaves out the requests of its zero-length warm-up call and of a
 * run's last partial second, which made a burst wait for fewer deliveries than it caused.
 */
async function toolCount(d: Deployment): Promise<number> {
  const res = await apiClient(d.base)("GET", "/api/v1/tools?limit=1", { token: d.token });
  if (res.status !== 200) throw new Error(`${d.name}: listing tools answered ${res.status}`);
  return (res.body as { pagination: { total: number } }).pagination.total;
}

/** Waits until the receiver has `count` different deliveries (a repeated one does not count). */
async function allDelivered(d: Deployment, receiver: Receiver, count: number): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while (receiver.count - receiver.repeated < count) {
    if (Date.now() > deadline) throw new Error(`${d.name}: ${receiver.count - receiver.repeated} of ${count} deliveries after ${DRAIN_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Medians of the bursts of one replica count (counts summed), so one slow moment of the machine does not decide. */
function medianRow(rows: EventRow[]): EventRow {
  const sum = (pick: (row: EventRow) => number) => rows.reduce((total, row) => total + pick(row), 0);
  return {
    ...medianFields(rows, ["createsPerSecond", "eventsPerSecond", "drainMs", "cpuMsPerEvent"]),
    receiverMs: rows[0]!.receiverMs,
    bursts: rows.length,
    creates: sum((r) => r.creates),
    delivered: sum((r) => r.delivered),
    repeated: sum((r) => r.repeated),
  };
}

/**
 * Creates at 1 and 8 clients, then reads and creates at 32 in turn PAIR_ROUNDS times, on a fresh deployment; then
 * the bursts on another fresh deployment with a subscription, BURST_ROUNDS rounds of a burst with one webhooks
 * replica and one with a second replica started for the burst and stopped after it, each after a warm-up whose
 * deliveries have all arrived.
 */
async function measureDeployment(name: "embedded" | "nats", natsUrl: string, mongoUrl: string, mongoPid: number, receiver: Receiver): Promise<DeploymentResult> {
  console.error(`${name}: starting`);
  let d = await startDeployment(name, natsUrl, mongoUrl);
  const pids = () => [mongoPid, ...d.procs.map((p) => p.pid)];
  const exited = () => d.procs.map((p) => p.exited);
  const creates: CreateRow[] = [];
  const pairs: { reads: Measurement; creates: CreateRow }[] = [];
  const measureCreateRow = async (connections: number): Promise<CreateRow> => {
    await measureCreates(d, connections, WARMUP_SECONDS, 0);
    const [tools, before] = [await toolCount(d), cpuOf(pids())];
    const m = await Promise.race([measureCreates(d, connections, DURATION_SECONDS, 0), ...exited()]);
    const row = { ...m, cpuMsPerCreate: (cpuOf(pids()) - before) / ((await toolCount(d)) - tools) };
    console.error(`${name} creates @ ${connections}: ${Math.round(m.requestsPerSecond)}/s p50 ${m.p50Ms} ms p99 ${m.p99Ms} ms, ${row.cpuMsPerCreate.toFixed(2)} CPU ms/create`);
    return row;
  };
  try {
    for (const connections of CREATE_CLIENTS) creates.push(await measureCreateRow(connections));
    for (let round = 0; round < PAIR_ROUNDS; round++) {
      const reads = await Promise.race([measure(`${d.base}/api/v1/users/me`, { authorization: `Bearer ${d.token}` }, READ_CLIENTS, WARMUP_SECONDS, DURATION_SECONDS), ...exited()]);
      console.error(`${name} reads @ ${READ_CLIENTS}: ${Math.round(reads.requestsPerSecond)}/s p50 ${reads.p50Ms} ms`);
      pairs.push({ reads, creates: await measureCreateRow(READ_CLIENTS) });
    }
  } finally {
    await stopAll();
  }
  const reads = medianFields(pairs.map((p) => p.reads), ["requestsPerSecond", "p50Ms", "p99Ms", "totalRequests"]);
  creates.push(medianFields(pairs.map((p) => p.creates), ["requestsPerSecond", "p50Ms", "p99Ms", "totalRequests", "cpuMsPerCreate"]));
  const ratios = pairs.map((p) => p.creates.requestsPerSecond / p.reads.requestsPerSecond);
  const cpuPerCreate = creates[creates.length - 1]!.cpuMsPerCreate;
  const bursts: EventRow[] = [];
  d = await startDeployment(name, natsUrl, mongoUrl);
  try {
    const sub = await apiClient(d.base)("POST", "/api/v1/webhook-subscriptions", { token: d.token, body: { url: receiver.url, event_types: ["tool.created"] } });
    if (sub.status !== 201) throw new Error(`${name}: subscription answered ${sub.status}`);
    const rounds = [...Array<number>(BURST_ROUNDS).fill(0), ...Array<number>(SLOW_ROUNDS).fill(SLOW_RECEIVER_MS)];
    for (const [round, receiverMs] of rounds.entries()) {
      for (const replicas of round % 2 ? [2, 1] : [1, 2]) {
        const stopReplica = replicas === 2 ? await d.addWebhooksReplica() : undefined;
        try {
          receiver.reset();
          const before = await toolCount(d);
          await measureCreates(d, BURST_CLIENTS, BURST_WARMUP_SECONDS, 0);
          await allDelivered(d, receiver, (await toolCount(d)) - before);
          const row = await burst(d, receiver, pids, cpuPerCreate, replicas, receiverMs);
          console.error(
            `${name} events, ${replicas} webhooks replica(s), receiver answering after ${receiverMs} ms, round ${round + 1}: ${row.creates} creates (${Math.round(row.createsPerSecond)}/s), ` +
              `${row.delivered} delivered (${row.repeated} repeated), ${Math.round(row.eventsPerSecond)} events/s, drained ${row.drainMs} ms after the last create, ${row.cpuMsPerEvent.toFixed(2)} CPU ms/event`,
          );
          bursts.push(row);
        } finally {
          await stopReplica?.();
        }
      }
    }
  } finally {
    await stopAll();
  }
  const ofLatency = (receiverMs: number) => bursts.filter((row) => row.receiverMs === receiverMs);
  const events = [0, SLOW_RECEIVER_MS]
    .filter((receiverMs) => ofLatency(receiverMs).length)
    .flatMap((receiverMs) => [1, 2].map((replicas) => medianRow(ofLatency(receiverMs).filter((row) => row.replicas === replicas))));
  return { name, reads, creates, ratios, events, replicaRatios: roundRatios(ofLatency(0)), slowReplicaRatios: roundRatios(ofLatency(SLOW_RECEIVER_MS)), bursts };
}

/** Per round (two bursts in a row, one per replica count), two replicas' figures as ratios to one's. */
function roundRatios(bursts: EventRow[]): ReplicaRatio[] {
  return Array.from({ length: bursts.length / 2 }, (_, round) => {
    const [a, b] = bursts.slice(2 * round, 2 * round + 2);
    const [one, two] = a!.replicas === 1 ? [a!, b!] : [b!, a!];
    return { eventsPerSecond: two.eventsPerSecond / one.eventsPerSecond, cpuMsPerEvent: two.cpuMsPerEvent / one.cpuMsPerEvent };
  });
}

/** A latency as measured (two decimals): the median of an even number of rounds is the mean of the middle two. */
const ms = (value: number) => Number(value.toFixed(2));

function table(results: DeploymentResult[]): string {
  const lines = [
    "| deployment | measure | clients | per s | p50 ms | p99 ms | CPU ms each | note |",
    "|---|---|---:|---:|---:|---:|---:|---|",
  ];
  for (const r of results) {
    lines.push(`| ${r.name} | reads (GET /users/me) | ${r.reads.connections} | ${Math.round(r.reads.requestsPerSecond)} | ${ms(r.reads.p50Ms)} | ${ms(r.reads.p99Ms)} | — | medians of ${r.ratios.length} rounds |`);
    for (const c of r.creates) {
      const note = c.connections === READ_CLIENTS ? `medians of ${r.ratios.length} rounds after reads; ${median(r.ratios).toFixed(2)} of reads (rounds: ${r.ratios.map((x) => x.toFixed(2)).join(", ")})` : "";
      lines.push(`| ${r.name} | creates (POST /tools) | ${c.connections} | ${Math.round(c.requestsPerSecond)} | ${ms(c.p50Ms)} | ${ms(c.p99Ms)} | ${c.cpuMsPerCreate.toFixed(2)} | ${note} |`);
    }
    for (const e of r.events) {
      lines.push(
        `| ${r.name} | events e2e, ${e.replicas} webhooks replica${e.replicas > 1 ? "s" : ""}${e.receiverMs ? `, receiver answering after ${e.receiverMs} ms` : ""} | ${BURST_CLIENTS} | ${Math.round(e.eventsPerSecond)} | — | — | ${e.cpuMsPerEvent.toFixed(2)} | ` +
          `medians of ${e.bursts} bursts: ${e.delivered} delivered in all (${e.repeated} repeated), drained ${e.drainMs} ms after the last create (${Math.round(e.createsPerSecond)} creates/s) |`,
      );
    }
  }
  return lines.join("\n");
}

function verdicts(results: DeploymentResult[]): string[] {
  return results.flatMap((r) => {
    const c1 = r.creates.find((c) => c.connections === 1)!;
    const [one, two] = r.events;
    const eventsRatio = median(r.replicaRatios.map((x) => x.eventsPerSecond));
    const cpuRatio = median(r.replicaRatios.map((x) => x.cpuMsPerEvent));
    const rounds = (pick: (x: DeploymentResult["replicaRatios"][number]) => number) => r.replicaRatios.map((x) => pick(x).toFixed(3)).join(", ");
    const check = (ok: boolean, what: string) => `${r.name}: ${ok ? "MET" : "MISSED"} ${what}`;
    const slow = r.slowReplicaRatios;
    const [slowOne, slowTwo] = r.events.filter((e) => e.receiverMs);
    const slowLine = slow.length
      ? [
          `${r.name}: (not a target) with the receiver answering after ${SLOW_RECEIVER_MS} ms, two replicas ÷ one within a round: ` +
            `events/s ${median(slow.map((x) => x.eventsPerSecond)).toFixed(3)} (rounds: ${slow.map((x) => x.eventsPerSecond.toFixed(3)).join(", ")}), ` +
            `CPU ms per event ${median(slow.map((x) => x.cpuMsPerEvent)).toFixed(3)} (rounds: ${slow.map((x) => x.cpuMsPerEvent.toFixed(3)).join(", ")}); ` +
            `medians ${Math.round(slowTwo!.eventsPerSecond)} vs ${Math.round(slowOne!.eventsPerSecond)} events/s`,
        ]
      : [];
    return [
      check(median(r.ratios) >= TARGET.createsToReads, `creates at 32 ÷ reads at 32 = ${median(r.ratios).toFixed(2)}, the median of ${r.ratios.length} paired rounds (needs ≥ ${TARGET.createsToReads})`),
      check(c1.p50Ms <= TARGET.p50OneClientMs, `p50 of a create at one client ${c1.p50Ms} ms (needs ≤ ${TARGET.p50OneClientMs})`),
      check(Math.max(one!.drainMs, two!.drainMs) <= TARGET.drainMs, `backlog drained ${one!.drainMs} / ${two!.drainMs} ms after the last create (needs ≤ ${TARGET.drainMs})`),
      check(
        eventsRatio >= 1 && cpuRatio <= 1,
        `two replicas ÷ one within a round: events/s ${eventsRatio.toFixed(3)} (rounds: ${rounds((x) => x.eventsPerSecond)}; needs ≥ 1), ` +
          `CPU ms per event ${cpuRatio.toFixed(3)} (rounds: ${rounds((x) => x.cpuMsPerEvent)}; needs ≤ 1); medians ${Math.round(two!.eventsPerSecond)} vs ${Math.round(one!.eventsPerSecond)} events/s`,
      ),
      ...slowLine,
    ];
  });
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  ensureLocalMongoBuilt();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-writes-mongo-"));
  own({ stop: async () => rmSync(dataDir, { recursive: true, force: true }) });
  const mongo = own(await startLocalMongo({ dataDir }));
  const receiver = await startReceiver();
  own({ stop: receiver.close });
  const disarm = startWatchdog(2 * (2 * STARTUP_TIMEOUT_MS + 4 * (BURST_ROUNDS + SLOW_ROUNDS) * DRAIN_TIMEOUT_MS + 60_000));
  const results: DeploymentResult[] = [];
  for (const name of DEPLOYMENTS) results.push(await measureDeployment(name, nats.url, mongo.url, mongo.pid, receiver));
  disarm();
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}; load average ${host.loadAverage1mBefore} before the run; autocannon shares these cores. ` +
      `One run; ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per load; reads and creates at 32 in turn ${PAIR_ROUNDS} times, each ratio within its round; bursts of ${BURST_SECONDS} s after ${BURST_WARMUP_SECONDS} s of warm-up, ${BURST_ROUNDS} rounds of one burst per replica count (1-2, then 2-1), medians shown, the replica target judged on the ratios within rounds; ` +
      `then ${SLOW_ROUNDS} such rounds with the receiver answering after ${SLOW_RECEIVER_MS} ms; ` +
      `CPU of the platform processes and the local database server ` +
      `(per delivered event: the burst's CPU less its creates at the 32-client rate, per delivery)\n`,
  );
  console.log(table(results));
  console.log(`\n${verdicts(results).join("\n")}`);
  writeResults(RESULTS_FILE, { date: new Date().toISOString(), machine: host, results });
  console.log(`results written to ${path.relative(ROOT, RESULTS_FILE)}`);
}

runBench(main);
