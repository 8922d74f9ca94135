/**
 * Team push writes agents, tools and traits through their owners' batch actions (lib/owner-writes.ts,
 * docs/adr/0052-service-boundaries.md). Here the teams service runs on another node than the owners, so every
 * batch, commit and undo crosses NATS: records, undo logs and collision errors survive the trip, an undone update
 * restores the record as it was stored, and events are committed by the owners exactly when the push succeeds.
 */
import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { occupyNextIds, PLACEHOLDER_ACCOUNT } from "../harness/ids";
import { until } from "../harness/wait";

describe("team push through the owners' batch actions, across nodes", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let conn: mongoose.Connection;

  beforeAll(async () => {
    cluster = await startCluster({ database: "owner-writes", nodes: [["gateway"], ["users", "api-keys", "teams"], ["agents", "tools", "traits"]] });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "owner-writes")).token;
    conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
  });
  afterAll(async () => {
    await conn?.close();
    await cluster?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
  // A record's committed events, once logged: the log takes them a moment after the answers (lib/events.ts, grouped),
  // and a create covered by its id's block has no prepared entry to wait for, only its committed one.
  const committed = async (subject: string) => {
    const logged = async () => ({
      prepared: await conn.collection("events").countDocuments({ subject, state: "prepared" }),
      committed: await conn.collection("events").countDocuments({ subject, state: "committed" }),
    });
    await until(logged, (counts) => counts.prepared === 0 && counts.committed > 0, 10_000, `${subject} logged`);
    return conn.collection("events").find({ subject, state: "committed" }).sort({ seq: 1 }).toArray();
  };

  it("creates and updates through the owners; each change has one committed event with the record as the API shows it", async () => {
    const doc = {
      name: "Wire Team",
      traits: [{ name: "Wire Trait", category: "expertise" }],
      tools: [{ name: "Wire Tool", type: "function", config: { timeout: 5 } }],
      agents: [{ name: "Wire Agent", model: "m", traits: ["Wire Trait"] }],
    };
    const created = await call("POST", "/teams/push", doc);
    expect(created.status).toBe(200);
    const agent = created.body.agents[0];
    expect(agent.traits.map((t: { name: string }) => t.name)).toEqual(["Wire Trait"]);
    expect(agent.tools.map((t: { name: string }) => t.name)).toEqual(["Wire Tool"]);

    const [event] = await committed(`agents/${agent.id}`);
    expect(event?.type).toBe("agent.created");

    const updated = await call("POST", "/teams/push", { ...doc, agents: [{ ...doc.agents[0], description: "changed" }] });
    expect(updated.status).toBe(200);
    expect(updated.body.agents[0].id).toBe(agent.id);
    expect((await committed(`agents/${agent.id}`)).map((e) => e.type)).toEqual(["agent.created", "agent.updated"]);
    // Pushing the same document again changes nothing and records nothing.
    expect((await call("POST", "/teams/push", { ...doc, agents: [{ ...doc.agents[0], description: "changed" }] })).status).toBe(200);
    expect(await committed(`agents/${agent.id}`)).toHaveLength(2);
  });

  it("a failure after the owners wrote undoes their creates and updates, restores stored types, and commits no event", async () => {
    const kept = await call("POST", "/agents", { name: "Kept Agent", model: "m", description: "before" });
    expect(kept.status).toBe(201);
    const stored = await conn.collection("agents").findOne({ _id: kept.body.id });
    const eventsBefore = await committed(`agents/${kept.body.id}`);

    // Occupy the next team ids (in another account) so every attempt's team insert fails, after the owners wrote.
    await occupyNextIds(conn, "teams", (i) => ({ identifier: `wire-blocker-${i}`, name: "b", sort_name: "b" }));
    try {
      const res = await call("POST", "/teams/push", {
        name: "Doomed Wire Team",
        traits: [{ name: "Doomed Wire Trait" }],
        agents: [{ name: "Kept Agent", model: "m", description: "after", traits: ["Doomed Wire Trait"] }],
      });
      expect(res.status).toBe(409);
    } finally {
      await conn.collection("teams").deleteMany({ account_id: PLACEHOLDER_ACCOUNT });
    }
    expect(await conn.collection("traits").countDocuments({ name: "Doomed Wire Trait" })).toBe(0);
    const restored = await conn.collection("agents").findOne({ _id: kept.body.id });
    expect(restored).toEqual(stored);
    expect(restored?.updated_at).toBeInstanceOf(Date);
    expect(await committed(`agents/${kept.body.id}`)).toEqual(eventsBefore);
    // Every prepared entry goes: the failed push's dropped, the earlier pushes' dropped after their answers (the covers
    // of blocks of record ids stay while their blocks hand ids out).
    await until(() => conn.collection("events").countDocuments({ state: "prepared", ids: { $exists: false } }), (prepared) => prepared === 0, 10_000, "no prepared events");
  });

  it("concurrent pushes that collide in an owner re-plan and create no duplicates", async () => {
    const doc = { name: "Wire Race", traits: [{ name: "Wire Racer" }], tools: [{ name: "Wire Stopwatch", type: "function" }], agents: [{ name: "Wire Runner", model: "m", traits: ["Wire Racer"] }] };
    const results = await Promise.all(Array.from({ length: 5 }, () => call("POST", "/teams/push", doc)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const [collection, name] of [["agents", "Wire Runner"], ["tools", "Wire Stopwatch"], ["traits", "Wire Racer"], ["teams", "Wire Race"]]) {
      expect(await conn.collection(collection!).countDocuments({ name })).toBe(1);
    }
  });

  it("the batch actions are internal: the API routes none of them", async () => {
    const paths = (await api("GET", "/openapi.json")).body.paths as Record<string, Record<string, { operationId?: string }>>;
    const operations = Object.values(paths).flatMap((methods) => Object.values(methods).map((op) => op.operationId ?? ""));
    expect(operations.length).toBeGreaterThan(0);
    expect(operations.filter((id) => /batch/i.test(id))).toEqual([]);
    expect((await call("POST", "/agents/putBatch", { items: [] })).status).toBe(405);
  });
});
