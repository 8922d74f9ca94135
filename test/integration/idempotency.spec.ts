import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { freePort } from "../harness/servers";
import { until } from "../harness/wait";
import { secretBox } from "../../lib/secrets";
import { IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_TTL_MS, IdempotencyStore, idempotencyModel } from "../../services/gateway/idempotency";

/**
 * Idempotency-Key on POST, Stripe's semantics, across two gateway replicas: one in this process's cluster, the
 * other a separate process joined to the same NATS and database.
 */
describe("Idempotency-Key across two gateway replicas", () => {
  let cluster: Cluster;
  let other: ServiceProcess;
  let a: Api;
  let b: Api;
  let token: string;
  let slowSite: Server;
  let slowUrl: string;

  beforeAll(async () => {
    // A site that takes 1.5 s to answer: creating a knowledge source on it (data_type auto looks for a sitemap) stays in flight.
    slowSite = createServer((_req, res) => setTimeout(() => res.writeHead(404).end(), 1500));
    await new Promise<void>((resolve) => slowSite.listen(0, "127.0.0.1", resolve));
    slowUrl = `http://127.0.0.1:${(slowSite.address() as AddressInfo).port}/docs`;

    cluster = await startCluster({
      database: "idempotency",
      env: { EMBEDDING_PROVIDER: "none", ALLOW_LOOPBACK_TARGETS: "true" },
      nodes: [["gateway"], ["users", "api-keys", "agents", "tools", "traits", "teams", "knowledge"]],
    });
    a = apiClient(cluster.baseUrl);
    const port = await freePort();
    other = spawnServices(["gateway"], { NAMESPACE: cluster.namespace, MONGO_URL: cluster.mongoUrl, PORT: String(port), MCP_PORT: "0" });
    b = apiClient(`http://127.0.0.1:${port}`);
    token = (await signup(a, "idem")).token;
    await until(() => b("GET", "/api/v1/traits", { token }).catch(() => ({ status: 0 })), (r) => r.status === 200, 40_000, "second gateway serving");
  }, 90_000);

  afterAll(async () => {
    await other?.kill("SIGKILL");
    await cluster?.stop();
    await new Promise((resolve) => slowSite?.close(resolve));
  });

  const post = (api: Api, path: string, body: unknown, key?: string, t = token) =>
    api("POST", `/api/v1${path}`, { token: t, body, headers: key ? { "idempotency-key": key } : {} });
  const traitCount = async (t = token) => (await a("GET", "/api/v1/traits", { token: t })).body.pagination.total as number;

  it("without a key, two identical POSTs create two records", async () => {
    const before = await traitCount();
    await post(a, "/traits", { name: "Twice" });
    await post(a, "/traits", { name: "Twice" });
    expect(await traitCount()).toBe(before + 2);
  });

  it("a retry with the same key and body, on the other replica, replays the first answer and creates nothing", async () => {
    const before = await traitCount();
    const first = await post(a, "/traits", { name: "Once", tags: ["x"] }, "create-once-1");
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    // Same body, keys in another order: the same request.
    const retry = await post(b, "/traits", { tags: ["x"], name: "Once" }, "create-once-1");
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("location")).toBe(first.headers.get("location"));
    expect(retry.body).toEqual(first.body);
    expect(await traitCount()).toBe(before + 1);
  });

  it("the same key with another body (or path) is a 422 naming the header", async () => {
    await post(a, "/traits", { name: "Original" }, "reused-key");
    const other = await post(b, "/traits", { name: "Different" }, "reused-key");
    expect(other.status).toBe(422);
    expect(other.body.detail).toEqual([{ loc: ["header", "Idempotency-Key"], msg: expect.stringMatching(/different request/), type: "idempotency_key_reused" }]);
    expect((await post(a, "/tools", { name: "Original", identifier: "original" }, "reused-key")).status).toBe(422);
  });

  it("a duplicate while the first is still running is a 409; once it is done, it replays", async () => {
    const body = { paths: [slowUrl] };
    const first = post(a, "/knowledge?auto_load=false", body, "slow-create");
    await new Promise((r) => setTimeout(r, 400));
    const concurrent = await post(b, "/knowledge?auto_load=false", body, "slow-create");
    expect(concurrent.status).toBe(409);
    expect(concurrent.body.detail).toMatch(/in progress/);
    const done = await first;
    expect(done.status).toBe(201);
    const replay = await post(b, "/knowledge?auto_load=false", body, "slow-create");
    expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body.id]).toEqual([201, "true", done.body.id]);
    expect((await a("GET", "/api/v1/knowledge", { token })).body.pagination.total).toBe(1);
  });

  it("a refused request (4xx) keeps nothing: the key can be retried with a corrected body", async () => {
    const bad = await post(a, "/traits", { name: "" }, "fix-me");
    expect(bad.status).toBe(422);
    const fixed = await post(b, "/traits", { name: "Fixed" }, "fix-me");
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
  });

  it("keys are scoped per account and per credential", async () => {
    const stranger = (await signup(a, "idem-other")).token;
    const mine = await post(a, "/traits", { name: "Scoped" }, "shared-key");
    const theirs = await post(b, "/traits", { name: "Scoped" }, "shared-key", stranger);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
    // The same account through an API key: another credential, another scope.
    const key = (await post(a, "/account-api-keys", { name: "ci" })).body.key as string;
    const viaKey = await b("POST", "/api/v1/traits", { apiKey: key, body: { name: "Scoped" }, headers: { "idempotency-key": "shared-key" } });
    expect(viaKey.status).toBe(201);
    expect(viaKey.headers.get("idempotent-replayed")).toBeNull();
  });

  it("a key longer than 255 characters is a 422; stored keys expire after 24 hours and hold no plaintext answer", async () => {
    expect((await post(a, "/traits", { name: "Long" }, "k".repeat(256))).status).toBe(422);
    const created = await post(a, "/account-api-keys", { name: "secret holder" }, "with-secret");
    expect(created.status).toBe(201);
    const db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    try {
      const records = await db.collection("idempotency_keys").find({}).toArray();
      expect(records.length).toBeGreaterThan(0);
      for (const record of records) {
        const hoursLeft = (record.expires_at.getTime() - Date.now()) / 3600_000;
        expect(hoursLeft).toBeGreaterThan(23.9);
        expect(hoursLeft).toBeLessThanOrEqual(24);
      }
      expect(JSON.stringify(records)).not.toContain(created.body.key);
      const indexes = await db.collection("idempotency_keys").indexes();
      expect(indexes.some((index) => index.key.expires_at === 1)).toBe(true);
    } finally {
      await db.close();
    }
    const replay = await post(b, "/account-api-keys", { name: "secret holder" }, "with-secret");
    expect(replay.body.key).toBe(created.body.key);
  });

  it("a key held by a request that died is taken over after the lock; an expired key is a new key", async () => {
    const db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    try {
      const store = new IdempotencyStore(idempotencyModel(db), secretBox("test"));
      const claim = { id: `died-${Date.now()}`, accountId: 1, fingerprint: "f" };
      const now = Date.now();
      expect(await store.claim(claim, new Date(now))).toEqual({ run: true });
      await expect(store.claim(claim, new Date(now + 1000))).rejects.toMatchObject({ code: 409 });
      expect(await store.claim(claim, new Date(now + IDEMPOTENCY_LOCK_MS + 1000))).toEqual({ run: true });
      await store.keep(claim, { status: 201, body: "{}" });
      expect(await store.claim(claim, new Date(now + 2 * IDEMPOTENCY_LOCK_MS))).toEqual({ run: false, answer: expect.objectContaining({ status: 201, body: "{}" }) });
      expect(await store.claim({ ...claim, fingerprint: "g" }, new Date(now + 2 * IDEMPOTENCY_TTL_MS))).toEqual({ run: true });
      // Kept under one secrets key, read under another: refused, never a 500 and never run twice.
      await store.keep(claim, { status: 201, body: "{}" });
      const rotated = new IdempotencyStore(idempotencyModel(db), secretBox("another key"));
      await expect(rotated.claim({ ...claim, fingerprint: "g" }, new Date(now + 2 * IDEMPOTENCY_TTL_MS + 1))).rejects.toMatchObject({
        code: 409,
        message: expect.stringMatching(/can no longer be read/),
      });
      await store.prune(new Date(now + 3 * IDEMPOTENCY_TTL_MS));
      expect(await idempotencyModel(db).countDocuments({ _id: claim.id, account_id: 1 })).toBe(0);
    } finally {
      await db.close();
    }
  });
});
