import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { databaseUrl, freePort } from "../harness/servers";
import { apiClient, signup, type Api } from "../harness/http";
import { until, scaled } from "../harness/wait";

/**
 * SIGKILL while clients create records (issue 25, item 1): whatever point of a change the kill hits, once the
 * platform is back every stored record has exactly one created event and every created event a stored record.
 * Events are observed where a subscriber sees them, as webhook deliveries to a loopback receiver (one
 * `webhook-id` per event and subscription, redeliveries of one event share it). Bounded: a fixed number of
 * rounds of a second or two of writes each, against the one-process default and a NATS cluster.
 */

const TYPES = { tools: "tool", traits: "trait", agents: "agent" } as const;
type Collection = keyof typeof TYPES;
const COLLECTIONS = Object.keys(TYPES) as Collection[];
const WRITERS = 12;

/** Distinct webhook-ids per "<path> <type> <record id>", as a receiver sees them (a path per deployment). */
async function startReceiver() {
  const events = new Map<string, Set<string>>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const key = `${req.url} ${body.type} ${body.data.id}`;
      events.set(key, (events.get(key) ?? new Set()).add(String(req.headers["webhook-id"])));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    events,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Every id of the account's records of `collection`, page by page. */
async function storedIds(api: Api, token: string, collection: Collection): Promise<number[]> {
  const ids: number[] = [];
  for (let skip = 0; ; skip += 100) {
    const page = await api("GET", `/api/v1/${collection}?skip=${skip}&limit=100`, { token });
    if (page.status !== 200) throw new Error(`GET /${collection}: ${page.status} ${JSON.stringify(page.body)}`);
    const rows = (Array.isArray(page.body) ? page.body : page.body.data) as { id: number }[];
    ids.push(...rows.map((r) => r.id));
    if (rows.length < 100) return ids;
  }
}

/**
 * Kill rounds against one deployment: `start` brings the platform up (or back), `victim` is the process whose
 * SIGKILL cuts writes off. Prints one line of what was checked.
 */
async function killRounds(opts: { api: Api; label: string; rounds: number; start(): Promise<void>; victim(): ServiceProcess; receiver: Awaited<ReturnType<typeof startReceiver>> }) {
  const { api, receiver, rounds } = opts;
  await opts.start();
  await reachable(api, undefined, []);
  const { token } = await signup(api, `kill-${opts.label}`);
  let startingMs = 0;
  const start = async () => {
    const began = Date.now();
    await opts.start();
    await reachable(api, token, COLLECTIONS.map((c) => `/api/v1/${c}`));
    startingMs += Date.now() - began;
  };
  const sub = await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: receiver.url(`/${opts.label}`), event_types: COLLECTIONS.map((c) => `${TYPES[c]}.created`) } });
  expect(sub.status).toBe(201);

  let attempted = 0;
  const acknowledged = new Map<Collection, Set<number>>(COLLECTIONS.map((c) => [c, new Set()]));
  const cutOff: Promise<void>[] = [];
  const failures: string[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round > 0) await start();
    let writing = true;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const collection = COLLECTIONS[(w + i) % COLLECTIONS.length]!;
        attempted++;
        const name = `${opts.label}-r${round}-w${w}-${i}`;
        const res = await api("POST", `/api/v1/${collection}`, { token, body: { name, identifier: name } }).catch(() => null);
        if (res?.status === 201) acknowledged.get(collection)!.add(res.body.id);
        // Cut off: no answer or a 5xx while the process goes down; in a cluster the gateway's route is gone (404).
        else if (res && res.status < 500 && res.status !== 404) throw new Error(`POST /${collection}: ${res.status} ${JSON.stringify(res.body)}`);
        else await new Promise((r) => setTimeout(r, 50));
      }
    });
    // A random point: somewhere in the first changes of a fresh process or well into a busy stream.
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 1500));
    await opts.victim().kill("SIGKILL");
    writing = false;
    // Not awaited here: a request the gateway sent to the killed node waits for its disconnect (heartbeats).
    cutOff.push(...writers.map((writer) => writer.catch((err: Error) => void failures.push(err.message))));
  }
  await start();
  const restartedAt = Date.now();
  await Promise.all(cutOff);
  expect(failures).toEqual([]);

  // Converged: every stored record has a created event, every created event a stored record.
  const stored = new Map<Collection, number[]>();
  const keyOf = (c: Collection, id: number) => `/${opts.label} ${TYPES[c]}.created ${id}`;
  const missing = () => COLLECTIONS.flatMap((c) => (stored.get(c) ?? []).filter((id) => !receiver.events.has(keyOf(c, id))).map((id) => `${c}/${id}`));
  await until(
    async () => {
      for (const c of COLLECTIONS) stored.set(c, await storedIds(api, token, c));
      return missing();
    },
    (left) => left.length === 0,
    90_000,
    "every stored record delivered its created event (records without one)",
  );
  const convergedMs = Date.now() - restartedAt;
  await new Promise((r) => setTimeout(r, 1500)); // time for a second event of some record, if one were coming
  const storedKeys = new Set(COLLECTIONS.flatMap((c) => stored.get(c)!.map((id) => keyOf(c, id))));
  const delivered = [...receiver.events.entries()].filter(([key]) => key.startsWith(`/${opts.label} `) && key.includes(".created "));
  expect(delivered.filter(([key]) => !storedKeys.has(key)).map(([key]) => key)).toEqual([]);
  expect(delivered.filter(([, ids]) => ids.size !== 1).map(([key, ids]) => `${key}: ${ids.size} events`)).toEqual([]);
  expect(missing()).toEqual([]);
  // And no acknowledged write was lost.
  for (const c of COLLECTIONS) expect([...acknowledged.get(c)!].filter((id) => !stored.get(c)!.includes(id))).toEqual([]);
  const acked = COLLECTIONS.reduce((n, c) => n + acknowledged.get(c)!.size, 0);
  console.log(`KILL ${opts.label}: ${rounds} rounds of SIGKILL, ${attempted} writes sent (${acked} answered 201, ${storedKeys.size - acked} stored unanswered), ${delivered.length} created events checked: one per stored record, none without a record; ${startingMs} ms in (re)starts, converged ${convergedMs} ms after the last`);
}

/** The platform's settings for a kill test: short leases and abandonment, so recovery fits in the test's time. */
const FAST_RECOVERY = {
  ALLOW_LOOPBACK_TARGETS: "true",
  MCP_PORT: "0",
  EVENTS_POLL_MS: "300",
  EVENTS_LEASE_MS: "3000",
  EVENTS_ABANDONED_MS: "3000",
  WEBHOOK_POLL_MS: "200",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_LEASE_MS: "7000",
};

/** Waits until the gateway answers and reaches `paths` (2xx), after a (re)start. */
async function reachable(api: Api, token: string | undefined, paths: string[]) {
  await until(async () => (await api("GET", "/health").catch(() => ({ status: 0 }))).status, (s) => s === 200, 120_000, "gateway up");
  if (!token) return;
  for (const p of paths) await until(async () => (await api("GET", p, { token }).catch(() => ({ status: 0 }))).status, (s) => s === 200, 60_000, `GET ${p}`);
}

describe("events under SIGKILL: exactly one created event per stored record", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => (receiver = await startReceiver()));
  afterAll(() => receiver?.close());

  it("one process with the embedded store, killed at random points while 12 clients create tools, traits and agents", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "events-kill-"));
    const port = await freePort();
    const api = apiClient(`http://127.0.0.1:${port}`);
    let platform: ServiceProcess | undefined;
    const env = { ...FAST_RECOVERY, TRANSPORTER: "", MONGO_URL: "", DATA_DIR: dataDir, PORT: String(port) };
    try {
      await killRounds({
        api,
        label: "embedded",
        rounds: 5,
        receiver,
        victim: () => platform!,
        start: async () => {
          platform = spawnServices(["gateway", "users", "api-keys", "tools", "traits", "agents", "webhooks"], env);
        },
      });
    } finally {
      await platform?.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, scaled(240_000));

  it("a NATS cluster over the shared database, the process serving tools, traits and agents killed at random points", async () => {
    const port = await freePort();
    const api = apiClient(`http://127.0.0.1:${port}`);
    const env = { ...FAST_RECOVERY, NAMESPACE: `kill-${randomBytes(3).toString("hex")}`, MONGO_URL: databaseUrl(process.env.TEST_MONGO_URL!, "events-kill"), PORT: String(port) };
    let front: ServiceProcess | undefined;
    let resources: ServiceProcess | undefined;
    try {
      await killRounds({
        api,
        label: "cluster",
        rounds: 3,
        receiver,
        victim: () => resources!,
        start: async () => {
          front ??= spawnServices(["gateway", "users", "api-keys", "webhooks"], env);
          resources = spawnServices(["tools", "traits", "agents"], env);
        },
      });
    } finally {
      await Promise.all([front?.kill("SIGKILL"), resources?.kill("SIGKILL")]);
    }
  }, scaled(240_000));
});
