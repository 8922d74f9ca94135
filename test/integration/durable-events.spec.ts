import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { databaseUrl, freePort, startNats, type RunningServer } from "../harness/servers";
import { apiClient, signup } from "../harness/http";
import { scaled, until } from "../harness/wait";

/**
 * Fault tests of the durable event path, as an operator runs it: separate processes over a real NATS (restarted
 * in one test) and the real database. Every event must reach every webhook subscription exactly once, whatever
 * was down. Figures are printed (FAULT ...) for the report; speed is measured by the benches, not asserted here
 * except the interface's 5 s bound for the API to answer again after NATS returns.
 */

/** A receiver counting what each path got: webhook-id and the agent id in the body. */
async function startReceiver() {
  const got = new Map<string, { webhookId: string; type: string; agentId: number }[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const list = got.get(req.url ?? "/") ?? [];
      list.push({ webhookId: String(req.headers["webhook-id"]), type: body.type, agentId: body.data.id });
      got.set(req.url ?? "/", list);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => base + path,
    /** Deliveries to `path` about the given agents. */
    about: (path: string, agentIds: Set<number>) => (got.get(path) ?? []).filter((d) => agentIds.has(d.agentId)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Waits until `check` holds; its deadline is scaled for a busy machine (test/harness/wait.ts). */
const waitUntil = (check: () => boolean | Promise<boolean>, what: string, timeoutMs: number) => until(async () => check(), Boolean, timeoutMs, what);

describe("durable events: nothing is lost when a consumer, an emitter or NATS goes down", () => {
  let nats: RunningServer;
  let natsPort: number;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let env: Record<string, string>;
  let api: ReturnType<typeof apiClient>;
  let token: string;
  const processes: Record<string, ServiceProcess> = {};
  const SERVICES = { api: ["gateway", "users", "api-keys"], agents: ["agents"], webhooks: ["webhooks"] } as const;

  const start = (name: keyof typeof SERVICES) => (processes[name] = spawnServices([...SERVICES[name]], env));
  const createAgent = (name: string) => api("POST", "/api/v1/agents", { token, body: { name } });

  /** Waits until the gateway reaches a service (a 2xx from one of its routes). */
  const reachable = (path: string) => waitUntil(async () => (await api("GET", path, { token }).catch(() => ({ status: 0 }))).status === 200, `GET ${path}`, 30_000);

  /** Each subscription got each agent's agent.created exactly once (distinct webhook-ids, no extra requests). */
  async function expectExactlyOnce(agentIds: Set<number>, timeoutMs: number) {
    await waitUntil(() => ["/a", "/b"].every((p) => new Set(receiver.about(p, agentIds).map((d) => d.agentId)).size === agentIds.size), "every delivery", timeoutMs);
    await new Promise((r) => setTimeout(r, 1500)); // time for a duplicate to show up, if any were coming
    for (const path of ["/a", "/b"]) {
      const deliveries = receiver.about(path, agentIds);
      expect(deliveries).toHaveLength(agentIds.size);
      expect(new Set(deliveries.map((d) => d.webhookId)).size).toBe(agentIds.size);
      expect(deliveries.every((d) => d.type === "agent.created")).toBe(true);
    }
  }

  beforeAll(async () => {
    natsPort = await freePort();
    nats = await startNats(natsPort);
    receiver = await startReceiver();
    const port = await freePort();
    env = {
      TRANSPORTER: nats.url,
      NAMESPACE: `durable-${randomBytes(3).toString("hex")}`,
      MONGO_URL: databaseUrl(process.env.TEST_MONGO_URL!, "durable-events"),
      PORT: String(port),
      ALLOW_LOOPBACK_TARGETS: "true",
      WEBHOOK_POLL_MS: "200",
      EVENTS_POLL_MS: "500",
      MCP_PORT: "0",
    };
    api = apiClient(`http://127.0.0.1:${port}`);
    start("api");
    start("agents");
    start("webhooks");
    await waitUntil(async () => (await api("GET", "/health").catch(() => ({ status: 0 }))).status === 200, "gateway up", 40_000);
    await waitUntil(async () => (await api("POST", "/api/v1/users/", { body: { email: `probe-${Date.now()}@example.com`, password: "password-123" } }).catch(() => ({ status: 0 }))).status === 201, "users up", 30_000);
    token = (await signup(api, "durable")).token;
    await reachable("/api/v1/agents");
    await reachable("/api/v1/webhook-subscriptions");
    for (const path of ["/a", "/b"]) {
      const sub = await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: receiver.url(path), event_types: ["agent.created"] } });
      expect(sub.status).toBe(201);
    }
  }, scaled(90_000));

  afterAll(async () => {
    await Promise.all(Object.values(processes).map((p) => p.kill("SIGKILL")));
    await receiver?.close();
    await nats?.stop();
  });

  it("(a) webhooks process killed, 50 events while it is down, restart: each subscription gets each event exactly once", async () => {
    await processes.webhooks!.kill("SIGKILL");
    const created = await Promise.all(Array.from({ length: 50 }, (_, i) => createAgent(`while-down-${i}`)));
    expect(created.map((r) => r.status)).toEqual(Array(50).fill(201));
    const ids = new Set(created.map((r) => r.body.id as number));
    const restartedAt = Date.now();
    start("webhooks");
    await expectExactlyOnce(ids, 45_000);
    console.log(`FAULT (a) 50 events x 2 subscriptions delivered exactly once, ${Date.now() - restartedAt} ms after the webhooks restart`);
  }, scaled(60_000));

  it("(c) NATS restarted mid-stream: nothing lost, and the API answers again within 5 s of NATS returning", async () => {
    const results: { sentAt: number; status: number; id?: number }[] = [];
    let natsBackAt = Infinity;
    const streamUntil = Date.now() + 9000;
    const inFlight: Promise<void>[] = [];
    const stream = (async () => {
      for (let i = 0; Date.now() < streamUntil && i < 200; i++) {
        const sentAt = Date.now();
        inFlight.push(
          api("POST", "/api/v1/agents", { token, body: { name: `stream-${i}` } })
            .then((r) => void results.push({ sentAt, status: r.status, id: r.body?.id }))
            .catch(() => void results.push({ sentAt, status: 0 })),
        );
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, 1500));
    await nats.stop();
    await new Promise((r) => setTimeout(r, 2000));
    nats = await startNats(natsPort);
    natsBackAt = Date.now();
    await stream;
    await Promise.all(inFlight);
    const firstOk = Math.min(...results.filter((r) => r.status === 201 && r.sentAt >= natsBackAt).map((r) => r.sentAt));
    const recoveryMs = firstOk - natsBackAt;
    const ids = new Set(results.filter((r) => r.status === 201).map((r) => r.id!));
    console.log(`FAULT (c) first 201 for a request sent ${recoveryMs} ms after NATS returned; ${ids.size} of ${results.length} creates answered 201`);
    expect(recoveryMs).toBeLessThan(5000);
    await expectExactlyOnce(ids, 30_000);
  }, scaled(60_000));

  it("(b) the emitting service killed right after answering 2xx: its events still arrive", async () => {
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createAgent(`last-words-${i}`));
    await processes.agents!.kill("SIGKILL");
    expect(created.map((r) => r.status)).toEqual(Array(5).fill(201));
    await expectExactlyOnce(new Set(created.map((r) => r.body.id as number)), 30_000);
    console.log("FAULT (b) 5 events of a killed emitter delivered exactly once");
  }, scaled(60_000));
});
