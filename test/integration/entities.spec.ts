import type { Context, ServiceSchema } from "moleculer";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { parseCsv } from "../unit/entities/parse-csv";
import { scaled } from "../harness/wait";

/** Collects the entity.* events the service emits, from a node of its own. */
const events: { name: string; payload: { account_id: number; data: { id: number } & Record<string, unknown> } }[] = [];
const listener: ServiceSchema = {
  name: "entity-events-listener",
  events: {
    "entity.*"(ctx: Context<(typeof events)[number]["payload"]>) {
      events.push({ name: ctx.eventName!, payload: ctx.params });
    },
  },
};

async function eventually(check: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

describe("entities (collected data) over NATS", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    cluster = await startCluster({ database: "entities", extraServices: [listener] });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  /** A fresh account with its token, account id and a helper bound to it. */
  async function account(prefix: string) {
    const { token } = await signup(api, prefix);
    const agent = async (name: string) => {
      const res = await api("POST", "/api/v1/agents", { token, body: { name } });
      expect(res.status).toBe(201);
      return res.body as { id: number; name: string; account_id: number };
    };
    const first = await agent(`${prefix} bot`);
    const accountId = first.account_id;
    /** Internal actions as the agent runtime and the MCP service call them: over NATS, account in meta. */
    const internal = <T = any>(action: string, params: Record<string, unknown>) =>
      cluster.brokers[0]!.call<T, Record<string, unknown>>(action, params, { meta: { accountId } });
    const req = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
    return { token, accountId, agent, firstAgent: first, internal, req };
  }

  describe("create, read, update, delete", () => {
    it("records a record (201, Location), copies the agent name, ignores read-only fields, and emits entity.created", async () => {
      const { req, firstAgent, accountId } = await account("crud");
      const created = await req("POST", "/entities", {
        agent_id: firstAgent.id,
        template_id: 12,
        entity_type_name: "Lead",
        entity_type_icon: "user",
        attributes: { name: "Ada", budget: 1200 },
        confidence_score: 0.8,
        display_name: "Ada",
        contact_email: "ada@example.com",
        session_channel: "web",
        // Cites nothing: the record is provenance-free, shown as null.
        provenance: {},
        account_id: 999,
        agent_name: "Forged",
        created_at: daysAgo(100),
      });
      expect(created.status).toBe(201);
      expect(created.headers.get("location")).toBe(`/api/v1/entities/${created.body.id}`);
      expect(created.body).toEqual({
        id: expect.any(Number),
        account_id: accountId,
        agent_id: firstAgent.id,
        agent_name: "crud bot",
        template_id: 12,
        entity_type_name: "Lead",
        entity_type_icon: "user",
        status: "new",
        attributes: { name: "Ada", budget: 1200 },
        confidence_score: 0.8,
        display_name: "Ada",
        contact_email: "ada@example.com",
        contact_phone: null,
        display_summary: null,
        session_channel: "web",
        session_id: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        provenance: null,
        session_excerpt: null,
      });
      // created_at is only for internal callers: REST records are dated now.
      expect(Date.now() - Date.parse(created.body.created_at)).toBeLessThan(60_000);
      await eventually(() => events.some((e) => e.name === "entity.created" && e.payload.data.id === created.body.id));
      const event = events.find((e) => e.name === "entity.created" && e.payload.data.id === created.body.id)!;
      expect(event.payload).toMatchObject({ type: "entity.created", account_id: accountId, data: { ...created.body, created_at: expect.any(String), updated_at: expect.any(String) } });

      const read = await req("GET", `/entities/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
    });

    it("refuses an agent that is not the caller's, bad values and unknown statuses with 422", async () => {
      const mine = await account("refuse");
      const theirs = await account("refuse-other");
      const base = { agent_id: mine.firstAgent.id, entity_type_name: "Lead" };
      const foreignAgent = await mine.req("POST", "/entities", { ...base, agent_id: theirs.firstAgent.id });
      expect(foreignAgent.status).toBe(422);
      expect(foreignAgent.body.detail).toEqual([{ loc: ["body", "agent_id"], msg: expect.stringContaining("No agent"), type: "reference" }]);
      expect((await mine.req("POST", "/entities", { ...base, agent_id: 987_654 })).status).toBe(422);
      for (const bad of [
        { status: "deleted" },
        { confidence_score: 1.5 },
        { attributes: { "": 1 } },
        { attributes: ["x"] },
        { entity_type_name: "" },
        { provenance: { name: { message_id: "x", quote: "q" } } },
      ]) {
        const res = await mine.req("POST", "/entities", { ...base, ...bad });
        expect([res.status, bad]).toEqual([422, bad]);
      }
      expect((await mine.req("POST", "/entities", { entity_type_name: "Lead" })).status).toBe(422);
      expect((await mine.req("GET", "/entities")).body.pagination.total).toBe(0);
    });

    it("moves any status to any other, replaces attributes, keeps search in step, and emits entity.updated", async () => {
      const { req, firstAgent } = await account("update");
      const { body } = await req("POST", "/entities", { agent_id: firstAgent.id, entity_type_name: "Lead", attributes: { name: "Before" } });
      for (const status of ["archived", "new", "actioned", "reviewed", "new"]) {
        const res = await req("PUT", `/entities/${body.id}`, { status });
        expect([res.status, res.body.status]).toEqual([200, status]);
      }
      const patched = await req("PATCH", `/entities/${body.id}`, { attributes: { name: "After", city: "Paris" }, display_name: "After", agent_id: 1, confidence_score: 0 });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ attributes: { name: "After", city: "Paris" }, display_name: "After", agent_id: firstAgent.id, confidence_score: null });
      expect((await req("GET", "/entities?search=before")).body.pagination.total).toBe(0);
      expect((await req("GET", "/entities?search=paris")).body.data.map((r: { id: number }) => r.id)).toEqual([body.id]);
      expect((await req("PUT", `/entities/${body.id}`, { status: "done" })).status).toBe(422);
      await eventually(() => events.some((e) => e.name === "entity.updated" && e.payload.data.id === body.id && e.payload.data.display_name === "After"));
    });

    it("deletes with 204 (then 404) and emits entity.deleted", async () => {
      const { req, firstAgent, accountId } = await account("delete");
      const { body } = await req("POST", "/entities", { agent_id: firstAgent.id, entity_type_name: "Lead" });
      const res = await req("DELETE", `/entities/${body.id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBe("");
      expect((await req("GET", `/entities/${body.id}`)).status).toBe(404);
      expect((await req("DELETE", `/entities/${body.id}`)).status).toBe(404);
      await eventually(() => events.some((e) => e.name === "entity.deleted" && e.payload.data.id === body.id));
      expect(events.find((e) => e.name === "entity.deleted" && e.payload.data.id === body.id)!.payload).toMatchObject({ type: "entity.deleted", account_id: accountId, data: { id: body.id } });
    });

    it("answers 403 for another account's record and 404 for a missing one; never lists it", async () => {
      const mine = await account("owner");
      const intruder = await account("intruder");
      const { body } = await mine.req("POST", "/entities", { agent_id: mine.firstAgent.id, entity_type_name: "Lead" });
      expect((await intruder.req("GET", `/entities/${body.id}`)).status).toBe(403);
      expect((await intruder.req("PUT", `/entities/${body.id}`, { status: "archived" })).status).toBe(403);
      expect((await intruder.req("DELETE", `/entities/${body.id}`)).status).toBe(403);
      expect((await mine.req("GET", `/entities/${body.id}`)).body.status).toBe("new");
      expect((await intruder.req("GET", "/entities")).body.pagination.total).toBe(0);
      expect((await intruder.req("GET", "/entities/987654")).status).toBe(404);
      expect((await intruder.req("GET", "/entities/abc")).status).toBe(422);
      await expect(intruder.internal("entities.get", { entity_id: body.id })).rejects.toMatchObject({ code: 403 });
      expect((await api("GET", "/api/v1/entities")).status).toBe(401);
    });
  });

  describe("an agent renamed", () => {
    it("lists, get, export and search show and match the new agent_name, as stats do; updated_at stays", async () => {
      const { req, agent } = await account("renamed");
      const bot = await agent("Zephyr desk");
      const created = (await req("POST", "/entities", { agent_id: bot.id, entity_type_name: "Lead", attributes: { city: "Oslo" } })).body;
      expect(created.agent_name).toBe("Zephyr desk");
      expect((await req("PUT", `/agents/${bot.id}`, { name: "Quasar desk" })).status).toBe(200);
      // The records follow through the agent.updated event (a consumer group), a moment after the rename.
      const deadline = Date.now() + 15_000;
      let record = (await req("GET", `/entities/${created.id}`)).body;
      while (record.agent_name !== "Quasar desk" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        record = (await req("GET", `/entities/${created.id}`)).body;
      }
      expect(record).toMatchObject({ agent_name: "Quasar desk", updated_at: created.updated_at });
      expect((await req("GET", "/entities")).body.data.map((r: { agent_name: string }) => r.agent_name)).toEqual(["Quasar desk"]);
      expect((await req("GET", "/entities?search=quasar")).body.data.map((r: { id: number }) => r.id)).toEqual([created.id]);
      expect((await req("GET", "/entities?search=zephyr")).body.data).toEqual([]);
      const rows = parseCsv((await req("GET", "/entities/export")).body);
      expect(rows[1]![rows[0]!.indexOf("agent_name")]).toBe("Quasar desk");
      const stats = (await req("GET", "/entities/stats")).body;
      expect(stats.agent_counts).toEqual([{ agent_id: bot.id, agent_name: "Quasar desk", count: 1 }]);
    });
  });

  describe("list, filters, facets, stats and export", () => {
    let ctx: Awaited<ReturnType<typeof account>>;
    let sales: { id: number; name: string };
    const ids: Record<string, number> = {};
    const listed = async (query: string) => {
      const res = await ctx.req("GET", `/entities${query}`);
      expect(res.status).toBe(200);
      return res.body.data.map((r: { id: number }) => r.id);
    };

    beforeAll(async () => {
      ctx = await account("lists");
      sales = await ctx.agent("Sales Desk");
      const support = ctx.firstAgent;
      const record = async (params: Record<string, unknown>) => (await ctx.internal<{ id: number }>("entities.record", params)).id;
      // Oldest first, so newest first is the reverse.
      ids.old = await record({ agent_id: sales.id, template_id: 1, entity_type_name: "Lead", attributes: { name: "Old Lead", budget: 10 }, created_at: daysAgo(40) });
      ids.ada = await record({ agent_id: support.id, template_id: 1, entity_type_name: "Lead", attributes: { name: "Ada Lovelace", note: "likes (math)" }, created_at: daysAgo(3) });
      ids.grace = await record({ agent_id: support.id, template_id: 1, entity_type_name: "Lead", status: "reviewed", attributes: { name: "GRACE Hopper" }, created_at: daysAgo(2) });
      ids.complaint = await record({
        agent_id: sales.id,
        template_id: 2,
        entity_type_name: "Complaint",
        status: "archived",
        attributes: { issue: 'late, "very" late\nagain', formula: "=HYPERLINK(\"http://evil\")" },
        display_name: "@mention",
        created_at: daysAgo(1),
      });
      ids.done = await record({ agent_id: support.id, template_id: 1, entity_type_name: "Lead", status: "actioned", attributes: { name: "Done Deal", tags: ["vip"] } });
      // Another account's records never show up.
      const other = await account("lists-other");
      await other.internal("entities.record", { agent_id: other.firstAgent.id, entity_type_name: "Lead", attributes: { name: "Ada Lovelace" } });
    });

    it("lists newest first with the paginated shape, limit 1..200 (default 50) and skip >= 0", async () => {
      const page = await ctx.req("GET", "/entities");
      expect(page.body.pagination).toEqual({ total: 5, skip: 0, limit: 50, has_more: false });
      expect(page.body.data.map((r: { id: number }) => r.id)).toEqual([ids.done, ids.complaint, ids.grace, ids.ada, ids.old]);
      expect(page.body).not.toHaveProperty("facets");
      expect(page.body.data[0]).not.toHaveProperty("provenance");
      expect(page.body.data[0]).not.toHaveProperty("search_text");
      const second = await ctx.req("GET", "/entities?skip=1&limit=2");
      expect(second.body.data.map((r: { id: number }) => r.id)).toEqual([ids.complaint, ids.grace]);
      expect(second.body.pagination).toEqual({ total: 5, skip: 1, limit: 2, has_more: true });
      for (const bad of ["limit=0", "limit=201", "skip=-1", "status=deleted", "days=0", "agent_id=x", "include_facets=maybe"]) {
        const res = await ctx.req("GET", `/entities?${bad}`);
        expect([bad, res.status]).toEqual([bad, 422]);
        expect(res.body.detail[0].loc[0]).toBe("query");
      }
      expect((await ctx.req("GET", "/entities?limit=200")).status).toBe(200);
    });

    it("filters by agent, status and days", async () => {
      expect(await listed(`?agent_id=${sales.id}`)).toEqual([ids.complaint, ids.old]);
      expect(await listed("?status=reviewed")).toEqual([ids.grace]);
      expect(await listed("?status=archived")).toEqual([ids.complaint]);
      expect(await listed("?days=30")).toEqual([ids.done, ids.complaint, ids.grace, ids.ada]);
      expect(await listed("?days=2&status=archived")).toEqual([ids.complaint]);
      expect(await listed(`?agent_id=${sales.id}&days=30`)).toEqual([ids.complaint]);
    });

    it("filters by template name ignoring case, and applies no template filter when none matches", async () => {
      expect(await listed("?template_name=complaint")).toEqual([ids.complaint]);
      expect(await listed("?template_name=%20LEAD%20")).toEqual([ids.done, ids.grace, ids.ada, ids.old]);
      expect(await listed("?template_name=Nothing%20like%20it")).toHaveLength(5);
      expect(await listed("?template_name=Nothing&status=reviewed")).toEqual([ids.grace]);
    });

    it("searches attribute values, agent name and data type name, case-insensitively, as a plain substring", async () => {
      expect(await listed("?search=hopper")).toEqual([ids.grace]);
      expect(await listed("?search=LOVELACE")).toEqual([ids.ada]);
      expect(await listed("?search=sales%20desk")).toEqual([ids.complaint, ids.old]);
      expect(await listed("?search=complaint")).toEqual([ids.complaint]);
      expect(await listed("?search=vip")).toEqual([ids.done]);
      expect(await listed("?search=(math)")).toEqual([ids.ada]);
      expect(await listed("?search=.*")).toEqual([]);
      expect(await listed("?search=10")).toEqual([ids.old]);
      // Attribute names are not searched.
      expect(await listed("?search=budget")).toEqual([]);
    });

    it("adds facets on request: types ignore the template filter, statuses ignore the status filter", async () => {
      const page = await ctx.req("GET", "/entities?include_facets=true&template_name=lead&status=new");
      expect(page.body.data.map((r: { id: number }) => r.id)).toEqual([ids.ada, ids.old]);
      expect(page.body.facets).toEqual({
        entity_types: [{ template_id: 1, template_name: "Lead", count: 2 }],
        statuses: { new: 2, reviewed: 1, actioned: 1, archived: 0 },
      });
      const facets = await ctx.req("GET", "/entities/facets");
      expect(facets.status).toBe(200);
      expect(facets.body).toEqual({
        entity_types: [
          { template_id: 1, template_name: "Lead", count: 4 },
          { template_id: 2, template_name: "Complaint", count: 1 },
        ],
        statuses: { new: 2, reviewed: 1, actioned: 1, archived: 1 },
      });
      const windowed = await ctx.req("GET", `/entities/facets?days=30&agent_id=${sales.id}&status=new`);
      expect(windowed.body).toEqual({ entity_types: [], statuses: { new: 0, reviewed: 0, actioned: 0, archived: 1 } });
      expect((await ctx.req("GET", "/entities/facets?status=nope")).status).toBe(422);
    });

    it("lists with svc_collected_data semantics through entities.list (limit 10, no has_more, facets only on request)", async () => {
      const page = await ctx.internal("entities.list", {});
      expect(page.pagination).toEqual({ total: 5, skip: 0, limit: 10 });
      expect(page).not.toHaveProperty("facets");
      const withFacets = await ctx.internal("entities.list", { include_facets: true, status: "archived", limit: 1 });
      expect(withFacets.data.map((r: { id: number }) => r.id)).toEqual([ids.complaint]);
      expect(withFacets.facets.statuses).toEqual({ new: 2, reviewed: 1, actioned: 1, archived: 1 });
      await expect(ctx.internal("entities.list", { limit: 201 })).rejects.toMatchObject({ code: 422 });
    });

    it("reports StatsRead all-time or for a window, and StatsByAgentRead with group_by_agent", async () => {
      const stats = await ctx.req("GET", "/entities/stats");
      expect(stats.status).toBe(200);
      expect(stats.body).toEqual({
        total: 5,
        status_counts: { new: 2, reviewed: 1, actioned: 1, archived: 1 },
        type_counts: [
          { template_id: 1, template_name: "Lead", count: 4 },
          { template_id: 2, template_name: "Complaint", count: 1 },
        ],
        agent_counts: [
          { agent_id: ctx.firstAgent.id, agent_name: "lists bot", count: 3 },
          { agent_id: sales.id, agent_name: "Sales Desk", count: 2 },
        ],
        period_days: null,
      });
      const windowed = await ctx.req("GET", "/entities/stats?days=30");
      expect(windowed.body).toMatchObject({ total: 4, period_days: 30, status_counts: { new: 1, reviewed: 1, actioned: 1, archived: 1 } });
      const oneAgent = await ctx.req("GET", `/entities/stats?agent_id=${sales.id}`);
      expect(oneAgent.body).toMatchObject({ total: 2, agent_counts: [{ agent_id: sales.id, agent_name: "Sales Desk", count: 2 }] });

      const byAgent = await ctx.req("GET", "/entities/stats?group_by_agent=true&days=30");
      expect(byAgent.body).toEqual({
        agents: [
          {
            agent_id: ctx.firstAgent.id,
            agent_name: "lists bot",
            status_counts: { new: 1, reviewed: 1, actioned: 1, archived: 0 },
            type_counts: [{ template_id: 1, template_name: "Lead", count: 3 }],
            total: 3,
          },
          {
            agent_id: sales.id,
            agent_name: "Sales Desk",
            status_counts: { new: 0, reviewed: 0, actioned: 0, archived: 1 },
            type_counts: [{ template_id: 2, template_name: "Complaint", count: 1 }],
            total: 1,
          },
        ],
        total: 4,
        period_days: 30,
      });
      expect(await ctx.internal("entities.stats", { group_by_agent: true })).toMatchObject({ total: 5, period_days: null });
      expect((await ctx.req("GET", "/entities/stats?days=-1")).status).toBe(422);
    });

    it("exports matching records as an RFC 4180 CSV download with attribute columns and neutralised formulas", async () => {
      const res = await ctx.req("GET", "/entities/export");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="collected-data-\d{4}-\d{2}-\d{2}\.csv"$/);
      const rows = parseCsv(res.body);
      expect(rows[0]).toEqual([
        "id", "created_at", "status", "entity_type_name", "agent_id", "agent_name", "confidence_score", "display_name",
        "contact_email", "contact_phone", "display_summary", "session_channel",
        "attributes.budget", "attributes.formula", "attributes.issue", "attributes.name", "attributes.note", "attributes.tags",
      ]);
      expect(rows.slice(1).map((r) => Number(r[0]))).toEqual([ids.done, ids.complaint, ids.grace, ids.ada, ids.old]);
      const byId = new Map(rows.slice(1).map((r) => [Number(r[0]), Object.fromEntries(rows[0]!.map((h, i) => [h, r[i]]))]));
      expect(byId.get(ids.complaint)).toMatchObject({
        status: "archived",
        entity_type_name: "Complaint",
        agent_name: "Sales Desk",
        display_name: "'@mention",
        "attributes.issue": 'late, "very" late\nagain',
        "attributes.formula": "'=HYPERLINK(\"http://evil\")",
        "attributes.name": "",
      });
      expect(byId.get(ids.done)).toMatchObject({ "attributes.tags": '["vip"]', status: "actioned" });
      expect(byId.get(ids.old)).toMatchObject({ "attributes.budget": "10", created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) });
      expect(res.body.endsWith("\r\n")).toBe(true);

      const filtered = parseCsv((await ctx.req("GET", `/entities/export?template_name=lead&search=hopper`)).body);
      expect(filtered[0]).toEqual(expect.arrayContaining(["attributes.name"]));
      expect(filtered[0]).not.toContain("attributes.issue");
      expect(filtered.slice(1).map((r) => Number(r[0]))).toEqual([ids.grace]);
      const empty = await ctx.req("GET", "/entities/export?search=zzz-nothing");
      expect(parseCsv(empty.body)).toHaveLength(1);
      expect((await ctx.req("GET", "/entities/export?status=nope")).status).toBe(422);
    });
  });

  describe("detail: provenance and session excerpt", () => {
    let ctx: Awaited<ReturnType<typeof account>>;
    let stored: { id: number; role: string; text: string; created_at: string }[];

    beforeAll(async () => {
      ctx = await account("detail");
      const turns = [
        { role: "system", text: "You are a helpful agent" },
        { role: "user", text: "Hello" },
        { role: "assistant", text: "Hi! How can I help?" },
        { role: "user", text: "I am Ada, mail me at ada@example.com" },
        { role: "tool", text: "{\"crm\":\"lookup\"}" },
        { role: "assistant", text: "Thanks Ada" },
        { role: "user", text: "L".repeat(700) },
        { role: "assistant", text: "Noted" },
        { role: "user", text: "Bye" },
      ].map((t, i) => ({ ...t, created_at: daysAgo(1 - i / 1000) }));
      stored = await ctx.internal("entities.recordSessionMessages", { session_id: "chat-1", messages: turns });
    });

    const record = (params: Record<string, unknown>) =>
      ctx.internal<{ id: number; provenance: unknown; session_excerpt: { id: number; role: string; text: string; created_at: string }[] | null }>("entities.record", {
        agent_id: ctx.firstAgent.id,
        entity_type_name: "Lead",
        ...params,
      });

    it("stores session messages in order with increasing ids", () => {
      expect(stored.map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "tool", "assistant", "user", "assistant", "user"]);
      expect(stored.map((m) => m.id)).toEqual([...stored.map((m) => m.id)].sort((a, b) => a - b));
      expect(stored[0]).toMatchObject({ session_id: "chat-1", text: "You are a helpful agent", created_at: expect.anything() });
    });

    it("shows the cited message with one visible neighbour on each side; unverifiable message ids become null", async () => {
      const other = await ctx.internal<{ id: number }[]>("entities.recordSessionMessages", { session_id: "chat-2", messages: [{ role: "user", text: "elsewhere" }] });
      const created = await record({
        session_id: "chat-1",
        attributes: { name: "Ada", email: "ada@example.com", phone: "?" },
        provenance: {
          name: { message_id: stored[3]!.id, quote: "I am Ada" },
          email: { message_id: other[0]!.id, quote: "ada@example.com" },
          phone: { message_id: 987_654, quote: "none" },
        },
      });
      expect(created.provenance).toEqual({
        name: { message_id: stored[3]!.id, quote: "I am Ada" },
        email: { message_id: null, quote: "ada@example.com" },
        phone: { message_id: null, quote: "none" },
      });
      const detail = (await ctx.req("GET", `/entities/${created.id}`)).body;
      expect(detail.provenance).toEqual(created.provenance);
      // Neighbours skip the tool turn: the one after "I am Ada" is "Thanks Ada".
      expect(detail.session_excerpt.map((m: { id: number }) => m.id)).toEqual([stored[2]!.id, stored[3]!.id, stored[5]!.id]);
      expect(detail.session_excerpt[1]).toEqual({ id: stored[3]!.id, role: "user", text: "I am Ada, mail me at ada@example.com", created_at: expect.any(String) });
    });

    it("without citations shows the last 6 visible messages at or before the record, texts clipped to 500 characters", async () => {
      const detail = await record({ session_id: "chat-1", attributes: { name: "Ada" }, created_at: new Date().toISOString() });
      const visible = stored.filter((m) => m.role === "user" || m.role === "assistant");
      expect(detail.session_excerpt!.map((m) => m.id)).toEqual(visible.slice(-6).map((m) => m.id));
      const long = detail.session_excerpt!.find((m) => m.id === stored[6]!.id)!;
      expect(long.text).toHaveLength(500);
      expect(long.text).toBe("L".repeat(499) + "…");

      const early = await record({ session_id: "chat-1", created_at: stored[3]!.created_at });
      expect(early.session_excerpt!.map((m) => m.id)).toEqual([stored[1]!.id, stored[2]!.id, stored[3]!.id]);
    });

    it("is null for a record without a session, a session with only system and tool turns, and a deleted session", async () => {
      expect((await record({})).session_excerpt).toBeNull();
      await ctx.internal("entities.recordSessionMessages", { session_id: "hidden", messages: [{ role: "system", text: "s" }, { role: "tool", text: "t" }] });
      expect((await record({ session_id: "hidden" })).session_excerpt).toBeNull();

      await ctx.internal("entities.recordSessionMessages", { session_id: "gone", messages: [{ role: "user", text: "I am Bob" }] });
      const bob = await ctx.internal<{ id: number }[]>("entities.recordSessionMessages", { session_id: "gone", messages: [{ role: "assistant", text: "Hi Bob" }] });
      const created = await record({ session_id: "gone", provenance: { name: { message_id: bob[0]!.id, quote: "Bob" } } });
      expect(created.session_excerpt!.map((m) => m.text)).toEqual(["I am Bob", "Hi Bob"]);
      expect(await ctx.internal("entities.deleteSession", { session_id: "gone" })).toEqual({ deleted: 2 });
      const after = (await ctx.req("GET", `/entities/${created.id}`)).body;
      expect(after.session_excerpt).toBeNull();
      // The cited id now dangles; the quote stays as evidence.
      expect(after.provenance).toEqual({ name: { message_id: bob[0]!.id, quote: "Bob" } });
    });

    it("keeps sessions per account: another account's messages are never shown or verified", async () => {
      const other = await account("detail-other");
      const created = await other.internal("entities.record", {
        agent_id: other.firstAgent.id,
        entity_type_name: "Lead",
        session_id: "chat-1",
        provenance: { name: { message_id: stored[3]!.id, quote: "I am Ada" } },
      });
      expect(created.session_excerpt).toBeNull();
      expect(created.provenance).toEqual({ name: { message_id: null, quote: "I am Ada" } });
    });

    it("validates session messages", async () => {
      await expect(ctx.internal("entities.recordSessionMessages", { session_id: "x", messages: [{ role: "narrator", text: "t" }] })).rejects.toMatchObject({ code: 422 });
      await expect(ctx.internal("entities.recordSessionMessages", { session_id: "x", messages: [] })).rejects.toMatchObject({ code: 422 });
    });
  });

  describe("bulk delete (svc_collected_data_delete)", () => {
    it("previews without deleting, deletes own records only once confirmed, and skips other accounts' ids", async () => {
      const mine = await account("bulk-del");
      const theirs = await account("bulk-del-other");
      const make = async (who: typeof mine) => (await who.internal<{ id: number }>("entities.record", { agent_id: who.firstAgent.id, entity_type_name: "Lead" })).id;
      const [a, b, keep] = [await make(mine), await make(mine), await make(mine)];
      const foreign = await make(theirs);
      const entity_ids = [a, b, b, foreign, 987_654];

      const preview = await mine.internal("entities.deleteMany", { entity_ids });
      expect(preview).toEqual({ count: 2, warning: expect.stringContaining("2 collected data records"), confirm_instruction: expect.stringContaining("confirmed=true") });
      expect((await mine.req("GET", "/entities")).body.pagination.total).toBe(3);

      expect(await mine.internal("entities.deleteMany", { entity_ids, confirmed: true })).toEqual({ deleted: 2 });
      expect((await mine.req("GET", "/entities")).body.data.map((r: { id: number }) => r.id)).toEqual([keep]);
      expect((await theirs.req("GET", `/entities/${foreign}`)).status).toBe(200);
      expect(await mine.internal("entities.deleteMany", { entity_ids, confirmed: true })).toEqual({ deleted: 0 });
      await eventually(() => [a, b].every((id) => events.some((e) => e.name === "entity.deleted" && e.payload.data.id === id)));
      expect(events.some((e) => e.name === "entity.deleted" && e.payload.data.id === foreign)).toBe(false);
      await expect(mine.internal("entities.deleteMany", { entity_ids: [] })).rejects.toMatchObject({ code: 422 });
    });
  });

  describe("deleting an agent with collected data", () => {
    it("answers 409 with collected_count, then force=true deletes the agent and its records (204)", async () => {
      const ctx = await account("agent-del");
      const keeper = await ctx.agent("Keeper");
      const doomed = await ctx.agent("Doomed");
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await ctx.req("POST", "/entities", { agent_id: doomed.id, entity_type_name: "Lead", attributes: { n: i } })).body.id);
      const kept = (await ctx.req("POST", "/entities", { agent_id: keeper.id, entity_type_name: "Lead" })).body.id;

      const refused = await ctx.req("DELETE", `/agents/${doomed.id}`);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({ detail: expect.stringContaining("3 collected data records"), collected_count: 3 });
      expect((await ctx.req("GET", `/agents/${doomed.id}`)).status).toBe(200);

      expect((await ctx.req("DELETE", `/agents/${doomed.id}?force=true`)).status).toBe(204);
      expect((await ctx.req("GET", `/agents/${doomed.id}`)).status).toBe(404);
      for (const id of ids) expect((await ctx.req("GET", `/entities/${id}`)).status).toBe(404);
      expect((await ctx.req("GET", "/entities")).body.data.map((r: { id: number }) => r.id)).toEqual([kept]);
      // An agent without collected data goes without force.
      const empty = await ctx.agent("Empty");
      expect((await ctx.req("DELETE", `/agents/${empty.id}`)).status).toBe(204);
    });
  });

  // Last: the local database scans whole collections, so the bulk rows would slow every later test.
  describe("large exports", () => {
    it("exports many records in batches", async () => {
      const bulk = await account("bulk");
      for (let i = 0; i < 400; i += 100) {
        await Promise.all(
          Array.from({ length: 100 }, (_, j) =>
            bulk.internal("entities.record", { agent_id: bulk.firstAgent.id, entity_type_name: "Lead", attributes: { n: i + j, filler: "x".repeat(200) } }),
          ),
        );
      }
      const rows = parseCsv((await bulk.req("GET", "/entities/export")).body);
      expect(rows).toHaveLength(401);
      expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(400);
    }, scaled(120_000));
  });
});
