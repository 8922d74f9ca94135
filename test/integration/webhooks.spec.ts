import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import mongoose from "mongoose";
import { SERVICE_REGISTRY } from "../../services";
import { deliveryModel } from "../../services/webhooks/model";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled } from "../harness/wait";

/** One request the receiver got, as raw as it arrived. */
interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  verified: boolean;
  answered: number;
  at: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long the receiver waits for the secret of a path it has not been told about yet. */
const SECRET_WAIT_MS = 3000;

/** Checks a Standard Webhooks signature over the raw bytes, with node:crypto only (not the service's code). */
function verifiesWith(secret: string, headers: http.IncomingHttpHeaders, raw: Buffer): boolean {
  const id = String(headers["webhook-id"] ?? "");
  const timestamp = String(headers["webhook-timestamp"] ?? "");
  if (!id || !/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = Buffer.from(createHmac("sha256", key).update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`), raw])).digest("base64"));
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => Buffer.from(s.slice(3)))
    .some((mac) => mac.length === expected.length && timingSafeEqual(mac, expected));
}

/**
 * A webhook receiver on 127.0.0.1: each path has a secret and a script of statuses to answer (the last one
 * repeats); a delivery whose signature does not verify gets 401. A delivery to a path whose secret is not known
 * yet waits a little for it: a new catch-all subscription hears of its own creation, possibly before the test
 * has read its secret.
 */
async function startReceiver() {
  const secrets = new Map<string, string>();
  const scripts = new Map<string, number[]>();
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const path = req.url ?? "/";
      const raw = Buffer.concat(chunks);
      for (let waited = 0; !secrets.has(path) && waited < SECRET_WAIT_MS; waited += 50) await sleep(50);
      const secret = secrets.get(path);
      const verified = secret !== undefined && verifiesWith(secret, req.headers, raw);
      const script = scripts.get(path) ?? [204];
      const answered = !verified ? 401 : script.length > 1 ? script.shift()! : script[0]!;
      received.push({ path, headers: req.headers, rawBody: raw.toString("utf8"), verified, answered, at: Date.now() });
      res.writeHead(answered, answered >= 300 && answered < 400 ? { location: "/redirected" } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => base + path,
    /** Registers the secret a path verifies with, and what it answers. */
    expect(path: string, secret: string, script: number[] = [204]) {
      secrets.set(path, secret);
      scripts.set(path, [...script]);
    },
    at: (path: string) => received.filter((r) => r.path === path),
    /** Waits until a path has received at least `count` requests, and returns them. */
    async hits(path: string, count = 1): Promise<Received[]> {
      return waitFor(() => received.filter((r) => r.path === path).length >= count && received.filter((r) => r.path === path), `${count} deliveries to ${path}`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Falsy = false | 0 | "" | null | undefined;

async function waitFor<T>(probe: () => T | Falsy | Promise<T | Falsy>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}


/** The services a default cluster runs on its second node. */
const DEFAULT_SERVICES = Object.keys(SERVICE_REGISTRY).filter(
  (n) => !["gateway", "search", "knowledge", "knowledge-loader", "scheduler", "webhooks"].includes(n),
);

describe("webhook subscriptions and signed deliveries over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let db: mongoose.Connection;
  let token: string;
  let other: string;

  beforeAll(async () => {
    // Retries more than a second apart, so every attempt carries a different webhook-timestamp.
    // Two dispatcher replicas: every delivery below must still be attempted exactly as often as scripted.
    cluster = await startCluster({ database: "webhooks", env: { WEBHOOK_RETRY_SCHEDULE: "1500ms,1500ms,1500ms", WEBHOOK_POLL_MS: "100" }, nodes: [["gateway"], DEFAULT_SERVICES, ["webhooks"], ["webhooks"]] });
    api = apiClient(cluster.baseUrl);
    receiver = await startReceiver();
    db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    token = (await signup(api, "hooks")).token;
    other = (await signup(api, "outsider")).token;
  });
  afterAll(async () => {
    await cluster?.stop();
    await receiver?.close();
    await db?.close();
  });

  const post = (path: string, body: unknown, t = token) => api("POST", `/api/v1${path}`, { token: t, body });
  const get = (path: string, t = token) => api("GET", `/api/v1${path}`, { token: t });
  const put = (path: string, body: unknown, t = token) => api("PUT", `/api/v1${path}`, { token: t, body });
  const del = (path: string, t = token) => api("DELETE", `/api/v1${path}`, { token: t });

  /** A subscription whose receiver path verifies with its secret and answers with `script`. */
  async function subscribe(path: string, fields: object = {}, script?: number[], t = token) {
    const created = await post("/webhook-subscriptions", { url: receiver.url(path), ...fields }, t);
    expect(created.status).toBe(201);
    const { secret } = (await get(`/webhook-subscriptions/${created.body.id}/secret`, t)).body;
    receiver.expect(path, secret, script);
    return { ...created.body, secret } as { id: number; secret: string; url: string };
  }

  describe("subscriptions", () => {
    it("creates, reads, lists, partially updates and deletes a subscription", async () => {
      // The signing secret is the platform's to make: a client's is refused by name, not silently replaced.
      const ownSecret = await post("/webhook-subscriptions", { url: "https://hooks.example.com/in", secret: "mine" });
      expect([ownSecret.status, ownSecret.body.detail[0].loc]).toEqual([422, ["body", "secret"]]);
      const created = await post("/webhook-subscriptions", { url: "https://hooks.example.com/in", description: "CRM", event_types: ["agent.created"], account_id: 999 });
      expect(created.status).toBe(201);
      expect(created.headers.get("location")).toBe(`/api/v1/webhook-subscriptions/${created.body.id}`);
      expect(created.body).toEqual({
        id: expect.any(Number),
        account_id: expect.any(Number),
        url: "https://hooks.example.com/in",
        description: "CRM",
        event_types: ["agent.created"],
        enabled: true,
        disabled_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(created.body.account_id).not.toBe(999);
      const id = created.body.id;
      expect((await get(`/webhook-subscriptions/${id}`)).body).toEqual(created.body);

      const updated = await put(`/webhook-subscriptions/${id}`, { description: "CRM sync" });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ url: "https://hooks.example.com/in", description: "CRM sync", event_types: ["agent.created"], enabled: true });
      expect((await put(`/webhook-subscriptions/${id}`, { event_types: [], enabled: false })).body).toMatchObject({ event_types: [], enabled: false });

      await post("/webhook-subscriptions", { url: "https://hooks.example.com/second" });
      const page = await get("/webhook-subscriptions?limit=1");
      expect(page.status).toBe(200);
      expect(page.body.pagination).toEqual({ total: 2, skip: 0, limit: 1, has_more: true });
      expect(page.body.data[0].url).toBe("https://hooks.example.com/second");
      expect((await get("/webhook-subscriptions?limit=201")).status).toBe(422);
      expect((await get("/webhook-subscriptions?limit=0")).status).toBe(422);

      expect((await del(`/webhook-subscriptions/${id}`)).status).toBe(204);
      expect((await get(`/webhook-subscriptions/${id}`)).status).toBe(404);
      expect((await get("/webhook-subscriptions/999999")).status).toBe(404);
    });

    it("refuses a bad URL and unknown event types with 422, naming the allowed types", async () => {
      for (const url of ["ftp://example.com/x", "not a url", "", `https://example.com/${"a".repeat(2048)}`]) {
        const res = await post("/webhook-subscriptions", { url });
        expect(res.status).toBe(422);
        expect(res.body.detail[0].loc).toEqual(["body", "url"]);
      }
      expect((await post("/webhook-subscriptions", { description: "no url" })).status).toBe(422);
      const unknown = await post("/webhook-subscriptions", { url: "https://example.com/in", event_types: ["agent.created", "agent.exploded"] });
      expect(unknown.status).toBe(422);
      expect(unknown.body.detail).toHaveLength(1);
      expect(unknown.body.detail[0].loc).toEqual(["body", "event_types", 1]);
      expect(unknown.body.detail[0].msg).toContain("agent.created");
      expect(unknown.body.detail[0].msg).toContain("task.deleted");
      const { body } = await post("/webhook-subscriptions", { url: "https://example.com/ok" });
      expect((await put(`/webhook-subscriptions/${body.id}`, { url: "javascript:alert(1)" })).status).toBe(422);
      expect((await put(`/webhook-subscriptions/${body.id}`, { event_types: ["nope"] })).status).toBe(422);
      expect((await get(`/webhook-subscriptions/${body.id}`)).body.url).toBe("https://example.com/ok");
    });

    it("answers 403 for another account's subscription, everywhere", async () => {
      const { body } = await post("/webhook-subscriptions", { url: "https://example.com/private" });
      const path = `/webhook-subscriptions/${body.id}`;
      expect((await get(path, other)).status).toBe(403);
      expect((await put(path, { description: "x" }, other)).status).toBe(403);
      expect((await get(`${path}/secret`, other)).status).toBe(403);
      expect((await post(`${path}/secret/rotate`, {}, other)).status).toBe(403);
      expect((await get(`${path}/deliveries`, other)).status).toBe(403);
      expect((await del(path, other)).status).toBe(403);
      expect((await get("/webhook-subscriptions", other)).body.data.map((s: { id: number }) => s.id)).not.toContain(body.id);
      expect((await get(path)).status).toBe(200);
    });

    it("shows the secret only on the secret endpoint, as whsec_ and 24 to 32 random bytes", async () => {
      const created = await post("/webhook-subscriptions", { url: "https://example.com/quiet" });
      const path = `/webhook-subscriptions/${created.body.id}`;
      const res = await get(`${path}/secret`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(["secret"]);
      expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const bytes = Buffer.from(res.body.secret.slice(6), "base64").length;
      expect(bytes).toBeGreaterThanOrEqual(24);
      expect(bytes).toBeLessThanOrEqual(32);
      expect((await get(`${path}/secret`)).body.secret).toBe(res.body.secret);

      const elsewhere = [created, await get(path), await get("/webhook-subscriptions"), await put(path, { description: "d" }), await get(`${path}/deliveries`)];
      for (const r of elsewhere) {
        const text = JSON.stringify(r.body);
        expect(text).not.toContain(res.body.secret.slice(6));
        expect(text).not.toMatch(/secret/i);
      }
      // Stored sealed, never in clear.
      const stored = await db.collection("webhook_subscriptions").findOne({ _id: created.body.id } as never);
      expect(JSON.stringify(stored)).not.toContain(res.body.secret.slice(6));
    });
  });

  describe("deliveries", () => {
    it("creating an agent delivers a signed agent.created that verifies against the raw bytes", async () => {
      const { token: owner } = await signup(api, "created");
      const sub = await subscribe("/agent-created", { event_types: ["agent.created"] }, undefined, owner);
      const agent = (await post("/agents", { name: "Hooked agent" }, owner)).body;
      const [hit] = await receiver.hits("/agent-created");
      expect(hit!.verified).toBe(true);
      expect(hit!.answered).toBe(204);
      expect(hit!.headers["content-type"]).toBe("application/json");
      expect(hit!.headers["webhook-id"]).toMatch(/^msg_[A-Za-z0-9_-]+$/);
      expect(Math.abs(Number(hit!.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
      const payload = JSON.parse(hit!.rawBody);
      expect(payload).toEqual({ type: "agent.created", timestamp: expect.any(String), data: expect.objectContaining({ id: agent.id, name: "Hooked agent" }) });
      expect(new Date(payload.timestamp).toISOString()).toBe(payload.timestamp);

      // A changed body or another secret never verifies.
      const raw = Buffer.from(hit!.rawBody);
      expect(verifiesWith(sub.secret, hit!.headers, Buffer.from(hit!.rawBody.replace("Hooked", "Hacked")))).toBe(false);
      expect(verifiesWith("whsec_" + Buffer.alloc(32, 7).toString("base64"), hit!.headers, raw)).toBe(false);

      const deliveries = await waitFor(async () => {
        const res = await get(`/webhook-subscriptions/${sub.id}/deliveries`, owner);
        return res.body.data?.[0]?.status === "delivered" && res.body;
      }, "delivered status");
      expect(deliveries.data[0]).toMatchObject({ id: hit!.headers["webhook-id"], type: "agent.created", status: "delivered", attempts: 1, last_status: 204 });
    });

    it("retries a failing receiver with the same webhook-id, identical body and a fresh timestamp each time", async () => {
      const { token: owner } = await signup(api, "flaky");
      const sub = await subscribe("/flaky", { event_types: ["team.created"] }, [500, 503, 200], owner);
      await post("/teams", { name: "Flaky team" }, owner);
      const attempts = await receiver.hits("/flaky", 3);
      expect(attempts.map((a) => a.answered)).toEqual([500, 503, 200]);
      expect(attempts.every((a) => a.verified)).toBe(true);
      expect(new Set(attempts.map((a) => a.headers["webhook-id"])).size).toBe(1);
      expect(new Set(attempts.map((a) => a.rawBody)).size).toBe(1);
      expect(new Set(attempts.map((a) => a.headers["webhook-timestamp"])).size).toBe(3);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1000);
      await sleep(2000);
      expect(receiver.at("/flaky")).toHaveLength(3);
      const [delivery] = (await get(`/webhook-subscriptions/${sub.id}/deliveries`, owner)).body.data;
      expect(delivery).toMatchObject({ status: "delivered", attempts: 3, last_status: 200, last_error: null });
    });

    it("gives up after the schedule is used up", async () => {
      const { token: owner } = await signup(api, "down");
      const sub = await subscribe("/down", { event_types: ["team.deleted"] }, [500], owner);
      const team = (await post("/teams", { name: "Doomed team" }, owner)).body;
      await del(`/teams/${team.id}`, owner);
      const delivery = await waitFor(async () => {
        const res = await get(`/webhook-subscriptions/${sub.id}/deliveries?status=failed`, owner);
        return res.body.data?.[0];
      }, "failed delivery", 20_000);
      expect(delivery).toMatchObject({ type: "team.deleted", attempts: 4, last_status: 500, last_error: expect.stringContaining("gave up after 4 attempts") });
      expect(receiver.at("/down")).toHaveLength(4);
      expect(JSON.parse(receiver.at("/down")[0]!.rawBody).data).toEqual({ id: team.id });
    }, scaled(30_000));

    it("a 410 Gone answer disables the subscription and stops deliveries to it", async () => {
      const { token: owner } = await signup(api, "gone");
      const sub = await subscribe("/gone", { event_types: ["agent.created"] }, [410], owner);
      await subscribe("/gone-watcher", { event_types: ["webhook_subscription.updated"] }, undefined, owner);
      await post("/agents", { name: "First" }, owner);
      await waitFor(async () => (await get(`/webhook-subscriptions/${sub.id}`, owner)).body.enabled === false, "subscription disabled");
      const disabled = (await get(`/webhook-subscriptions/${sub.id}`, owner)).body;
      expect(disabled.disabled_reason).toContain("410");
      // The other subscriptions hear of it like of any change.
      const [news] = await receiver.hits("/gone-watcher");
      expect(JSON.parse(news!.rawBody)).toMatchObject({ type: "webhook_subscription.updated", data: { id: sub.id, enabled: false, disabled_reason: disabled.disabled_reason } });
      expect(receiver.at("/gone")).toHaveLength(1);
      await post("/agents", { name: "Second" }, owner);
      await sleep(1500);
      expect(receiver.at("/gone")).toHaveLength(1);
      // Enabling it again clears the reason and resumes deliveries.
      expect((await put(`/webhook-subscriptions/${sub.id}`, { enabled: true }, owner)).body).toMatchObject({ enabled: true, disabled_reason: null });
      receiver.expect("/gone", sub.secret, [204]);
      await post("/agents", { name: "Third" }, owner);
      await receiver.hits("/gone", 2);
    });

    it("delivers only the selected event types", async () => {
      const { token: owner } = await signup(api, "filter");
      await subscribe("/all-types", {}, undefined, owner);
      await subscribe("/team-deleted-only", { event_types: ["team.deleted"] }, undefined, owner);
      const agent = (await post("/agents", { name: "Filtered" }, owner)).body;
      await put(`/agents/${agent.id}`, { description: "changed" }, owner);
      // An update that changes nothing writes nothing and announces nothing; updated_at stays.
      const again = await put(`/agents/${agent.id}`, { description: "changed", name: "Filtered" }, owner);
      expect(again.status).toBe(200);
      const team = (await post("/teams", { name: "Filtered team" }, owner)).body;
      expect((await put(`/teams/${team.id}`, {}, owner)).body.updated_at).toBe(team.updated_at);
      await del(`/teams/${team.id}`, owner);
      await receiver.hits("/all-types", 6);
      await receiver.hits("/team-deleted-only");
      await sleep(500);
      const types = (path: string) => receiver.at(path).map((r) => JSON.parse(r.rawBody).type).sort();
      // Every type, the creation of both subscriptions included (its own as well).
      expect(types("/all-types")).toEqual(["agent.created", "agent.updated", "team.created", "team.deleted", "webhook_subscription.created", "webhook_subscription.created"]);
      expect(types("/team-deleted-only")).toEqual(["team.deleted"]);
      expect(JSON.parse(receiver.at("/all-types").find((r) => r.rawBody.includes("agent.updated"))!.rawBody).data).toMatchObject({ id: agent.id, description: "changed" });
    });

    it("announces subscriptions' own changes: a catch-all hears its creation, the others an update and a deletion, never a secret", async () => {
      const { token: owner } = await signup(api, "meta");
      const watcher = await subscribe("/meta-watcher", {}, undefined, owner);
      const [own] = await receiver.hits("/meta-watcher");
      expect(JSON.parse(own!.rawBody)).toEqual({
        type: "webhook_subscription.created",
        timestamp: expect.any(String),
        data: { ...(await get(`/webhook-subscriptions/${watcher.id}`, owner)).body },
      });
      const other = await subscribe("/meta-other", {}, undefined, owner);
      await receiver.hits("/meta-other");
      expect((await put(`/webhook-subscriptions/${other.id}`, { description: "renamed" }, owner)).status).toBe(200);
      await receiver.hits("/meta-other", 2);
      expect((await del(`/webhook-subscriptions/${other.id}`, owner)).status).toBe(204);
      const heard = (await receiver.hits("/meta-watcher", 4)).map((h) => JSON.parse(h.rawBody));
      const summary = (p: { type: string; data: { id: number } }) => `${p.type} ${p.data.id}`;
      expect(heard.map(summary).sort()).toEqual(
        [`webhook_subscription.created ${watcher.id}`, `webhook_subscription.created ${other.id}`, `webhook_subscription.deleted ${other.id}`, `webhook_subscription.updated ${other.id}`].sort(),
      );
      expect(heard.find((p) => p.type === "webhook_subscription.updated").data).toMatchObject({ id: other.id, description: "renamed" });
      expect(heard.find((p) => p.type === "webhook_subscription.deleted").data).toEqual({ id: other.id });
      // A deleted subscription cannot hear of its own deletion.
      await sleep(500);
      expect(receiver.at("/meta-other").map((r) => JSON.parse(r.rawBody).type)).toEqual(["webhook_subscription.created", "webhook_subscription.updated"]);
      for (const hit of [...receiver.at("/meta-watcher"), ...receiver.at("/meta-other")]) {
        expect(hit.verified).toBe(true);
        for (const secret of [watcher.secret, other.secret]) expect(hit.rawBody).not.toContain(secret.slice(6));
        expect(hit.rawBody).not.toMatch(/secret/i);
      }
    });

    it("a team push announces team.created, and team.updated when it pushes the same team again", async () => {
      const { token: owner } = await signup(api, "push");
      await subscribe("/pushed", { event_types: ["team.created", "team.updated"] }, undefined, owner);
      const first = await post("/teams/push", { name: "Pushed team", description: "v1" }, owner);
      expect(first.status).toBe(200);
      await receiver.hits("/pushed");
      expect((await post("/teams/push", { name: "Pushed team", description: "v2" }, owner)).status).toBe(200);
      const hits = await receiver.hits("/pushed", 2);
      expect(hits.map((h) => JSON.parse(h.rawBody)).map((p) => [p.type, p.data.id, p.data.description])).toEqual([
        ["team.created", first.body.id, "v1"],
        ["team.updated", first.body.id, "v2"],
      ]);
    });

    it("a push that creates or changes agents, tools and traits delivers their events in the one payload shape", async () => {
      const { token: owner } = await signup(api, "push-agents");
      await subscribe("/pushed-agents", { event_types: ["agent.created", "agent.updated", "tool.created", "trait.created"] }, undefined, owner);
      const doc = {
        name: "Agent team",
        traits: [{ name: "Friendly" }],
        tools: [{ name: "Lookup", type: "function" }],
        agents: [{ name: "Scout", model: "gpt-4o", traits: ["Friendly"] }, { name: "Writer", model: "gpt-4o" }],
      };
      expect((await post("/teams/push", doc, owner)).status).toBe(200);
      const first = (await receiver.hits("/pushed-agents", 4)).map((h) => JSON.parse(h.rawBody));
      expect(first.map((p) => `${p.type} ${p.data.name}`).sort()).toEqual(["agent.created Scout", "agent.created Writer", "tool.created Lookup", "trait.created Friendly"]);
      const scout = first.find((p) => p.data.name === "Scout")!;
      expect(Object.keys(scout)).toEqual(["type", "timestamp", "data"]);
      expect(scout.data).toMatchObject({ identifier: "scout", traits: [expect.objectContaining({ identifier: "friendly" })], tools: [expect.objectContaining({ name: "Lookup" })] });
      // Pushing again with one change announces only that change.
      expect((await post("/teams/push", { ...doc, agents: [{ ...doc.agents[0], system_prompt: "v2" }, doc.agents[1]] }, owner)).status).toBe(200);
      const second = (await receiver.hits("/pushed-agents", 5)).map((h) => JSON.parse(h.rawBody))[4];
      expect([second.type, second.data.name, second.data.instructions]).toEqual(["agent.updated", "Scout", "v2"]);
      await sleep(500);
      expect(receiver.at("/pushed-agents")).toHaveLength(5);
    });

    it("never delivers another account's events", async () => {
      const mine = await signup(api, "mine");
      const theirs = await signup(api, "theirs");
      const mySubscription = await subscribe("/mine", {}, undefined, mine.token);
      await subscribe("/theirs", {}, undefined, theirs.token);
      await post("/agents", { name: "Their agent" }, theirs.token);
      await receiver.hits("/theirs", 2);
      await sleep(1000);
      // Its own creation is all a catch-all subscription of the first account hears.
      const heard = receiver.at("/mine").map((r) => JSON.parse(r.rawBody));
      expect(heard.map((p) => [p.type, p.data.id])).toEqual([["webhook_subscription.created", mySubscription.id]]);
    });

    it("signs with both secrets after a rotation, so receivers can switch without losing deliveries", async () => {
      const { token: owner } = await signup(api, "rotate");
      const sub = await subscribe("/rotated", { event_types: ["agent.created"] }, undefined, owner);
      const rotated = await post(`/webhook-subscriptions/${sub.id}/secret/rotate`, {}, owner);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(sub.secret);
      expect(new Date(rotated.body.previous_secret_expires_at).getTime()).toBeGreaterThan(Date.now() + 3600_000);
      expect((await get(`/webhook-subscriptions/${sub.id}/secret`, owner)).body.secret).toBe(rotated.body.secret);
      receiver.expect("/rotated", rotated.body.secret);
      await post("/agents", { name: "After rotation" }, owner);
      const [hit] = await receiver.hits("/rotated");
      expect(hit!.verified).toBe(true);
      expect(String(hit!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
      expect(verifiesWith(sub.secret, hit!.headers, Buffer.from(hit!.rawBody))).toBe(true);
      // A second rotation within the first's overlap keeps the first secret signing until its announced expiry.
      const again = await post(`/webhook-subscriptions/${sub.id}/secret/rotate`, {}, owner);
      receiver.expect("/rotated", again.body.secret);
      await post("/agents", { name: "After the second rotation" }, owner);
      const [, second] = await receiver.hits("/rotated", 2);
      expect(String(second!.headers["webhook-signature"]).split(" ")).toHaveLength(3);
      for (const secret of [again.body.secret, rotated.body.secret, sub.secret]) expect(verifiesWith(secret, second!.headers, Buffer.from(second!.rawBody))).toBe(true);
    });

    it("a rotation changes nothing GET shows, updated_at included (the secret is not part of the subscription)", async () => {
      const { token: owner } = await signup(api, "rotate-quiet");
      const sub = await subscribe("/rotated-quiet", { event_types: ["agent.created"] }, undefined, owner);
      const before = (await get(`/webhook-subscriptions/${sub.id}`, owner)).body;
      await new Promise((r) => setTimeout(r, 20));
      expect((await post(`/webhook-subscriptions/${sub.id}/secret/rotate`, {}, owner)).status).toBe(200);
      expect((await get(`/webhook-subscriptions/${sub.id}`, owner)).body).toEqual(before);
    });

    it("refuses forbidden addresses at delivery time (SSRF guard) and records why", async () => {
      const { token: owner } = await signup(api, "ssrf");
      const created = await post("/webhook-subscriptions", { url: "http://169.254.169.254/latest/meta-data" }, owner);
      expect(created.status).toBe(201);
      await post("/agents", { name: "Probe" }, owner);
      const delivery = await waitFor(async () => {
        const [latest] = (await get(`/webhook-subscriptions/${created.body.id}/deliveries`, owner)).body.data;
        return latest?.last_error && latest;
      }, "refused attempt");
      expect(delivery).toMatchObject({ status: "pending", last_status: null, last_error: expect.stringContaining("refused") });
    });

    it("does not follow redirects: a 3xx is a failed attempt, retried at the same URL", async () => {
      const { token: owner } = await signup(api, "redirect");
      await subscribe("/moved", { event_types: ["agent.created"] }, [302, 204], owner);
      await post("/agents", { name: "Redirected" }, owner);
      const attempts = await receiver.hits("/moved", 2);
      expect(attempts.map((a) => a.answered)).toEqual([302, 204]);
      expect(receiver.at("/redirected")).toHaveLength(0);
    });

    it("a delivery claimed by a dispatcher that died is taken over when its lease expires", async () => {
      const { token: owner, user } = await signup(api, "lease");
      const sub = await subscribe("/orphan", { event_types: ["task.created"] }, undefined, owner);
      const leaseEnds = Date.now() + 1500;
      const body = JSON.stringify({ type: "task.created", timestamp: new Date().toISOString(), data: { id: 42 } });
      // What a dispatcher leaves behind when it dies mid-attempt: a pending delivery it still holds.
      await deliveryModel(db).create({
        _id: "msg_orphanedByDeadDispatcher1",
        subscription_id: sub.id,
        account_id: user.account_id,
        type: "task.created",
        body,
        attempts: 1,
        next_attempt_at: new Date(Date.now() - 1000),
        status: "pending",
        lease_owner: "dead-dispatcher",
        lease_expires_at: new Date(leaseEnds),
      });
      const [hit] = await receiver.hits("/orphan");
      expect(hit!.at).toBeGreaterThanOrEqual(leaseEnds);
      expect(hit!.verified).toBe(true);
      expect(hit!.headers["webhook-id"]).toBe("msg_orphanedByDeadDispatcher1");
      expect(hit!.rawBody).toBe(body);
      const stored = await waitFor(async () => {
        const doc = await deliveryModel(db).findOne({ _id: "msg_orphanedByDeadDispatcher1", account_id: user.account_id }).lean();
        return doc?.status === "delivered" && doc;
      }, "delivered after takeover");
      expect(stored).toMatchObject({ attempts: 2, lease_owner: null });
      await sleep(500);
      expect(receiver.at("/orphan")).toHaveLength(1);
    });
  });
});

describe("webhook deliveries where loopback targets are not allowed", () => {
  let cluster: Cluster;
  let api: Api;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    // The cluster's own address policy (the test run's default allows loopback, for the receiver above).
    cluster = await startCluster({ database: "webhooks_no_loopback", env: { ALLOW_LOOPBACK_TARGETS: "false", WEBHOOK_POLL_MS: "100" }, nodes: [["gateway"], [...DEFAULT_SERVICES, "webhooks"]] });
    api = apiClient(cluster.baseUrl);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await cluster?.stop();
    await receiver?.close();
  });

  it("refuses a host name that resolves to a loopback address", async () => {
    const { token } = await signup(api, "rebind");
    const path = "/via-localhost";
    const created = await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: receiver.url(path).replace("127.0.0.1", "localhost"), event_types: ["agent.created"] } });
    expect(created.status).toBe(201);
    await api("POST", "/api/v1/agents", { token, body: { name: "Probe" } });
    const delivery = await waitFor(async () => {
      const [latest] = (await api("GET", `/api/v1/webhook-subscriptions/${created.body.id}/deliveries`, { token })).body.data;
      return latest?.last_error && latest;
    }, "refused attempt");
    expect(delivery.last_error).toMatch(/refused to (deliver|connect) to .*(127\.0\.0\.1|::1)/);
    expect(receiver.at(path)).toHaveLength(0);
  });
});
