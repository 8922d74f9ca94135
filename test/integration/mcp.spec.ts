import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

/** The MCP server node stands alone, so every tool call reaches entities (and api-keys) over NATS. */
const DATA_NODE = ["users", "api-keys", "agents", "tools", "traits", "entities"];

describe("MCP server over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let mcpUrl: string;
  let token: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    cluster = await startCluster({ database: "mcp", env: { MCP_PORT: "0", MCP_HOST: "127.0.0.1" }, nodes: [["gateway"], ["mcp"], DATA_NODE] });
    const mcp = cluster.brokers[1]!.getLocalService("mcp") as unknown as { server: Server };
    mcpUrl = `http://127.0.0.1:${(mcp.server.address() as AddressInfo).port}`;
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "mcp")).token;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  /** A real MCP client over loopback HTTP; `headers` go on every request it sends. */
  async function connect(headers: Record<string, string> = {}, base = mcpUrl): Promise<Client> {
    const client = new Client({ name: "mcp-spec", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;

  describe("protocol", () => {
    it("initializes without credentials and names the server with the platform version", async () => {
      const client = await connect();
      const health = await api("GET", "/health");
      expect(client.getServerVersion()).toEqual({ name: health.body.server, version: health.body.version });
      expect(client.getServerCapabilities()?.tools).toBeDefined();
    });

    it("lists the interface's three tools with their JSON Schemas and annotations, then the knowledge retrieval tools", async () => {
      const { tools } = await (await connect()).listTools();
      // The three the interface names, then the additions of issue 26 (docs/adr/0054; their shapes: mcp-knowledge.spec.ts).
      expect(tools.map((t) => t.name)).toEqual([
        "svc_health", "svc_collected_data", "svc_collected_data_delete", "svc_knowledge_search", "svc_knowledge_sources", "svc_knowledge_document",
      ]);
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));

      expect(byName.svc_health!.inputSchema).toMatchObject({ type: "object" });
      expect(Object.keys(byName.svc_health!.inputSchema.properties ?? {})).toEqual([]);
      expect(byName.svc_health!.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });

      const data = byName.svc_collected_data!;
      expect(data.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
      expect(data.inputSchema.required ?? []).toEqual([]);
      expect(data.inputSchema.properties).toMatchObject({
        action: { type: "string", enum: ["list", "get", "stats"], default: "list" },
        agent_id: { type: "integer", minimum: 1 },
        entity_id: { type: "integer", minimum: 1 },
        template_name: { type: "string" },
        days: { type: "integer", minimum: 1 },
        status: { type: "string", enum: ["new", "reviewed", "actioned", "archived"] },
        search: { type: "string" },
        skip: { type: "integer", minimum: 0, default: 0 },
        limit: { type: "integer", minimum: 1, default: 10 },
        group_by_agent: { type: "boolean", default: false },
        include_facets: { type: "boolean", default: false },
      });
      expect(Object.keys(data.inputSchema.properties ?? {}).sort()).toEqual(
        ["action", "agent_id", "days", "entity_id", "group_by_agent", "include_facets", "limit", "search", "skip", "status", "template_name"],
      );

      const del = byName.svc_collected_data_delete!;
      expect(del.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true, readOnlyHint: false });
      expect(del.inputSchema.required).toEqual(["entity_ids"]);
      expect(del.inputSchema.properties).toEqual({
        entity_ids: expect.objectContaining({ type: "array", minItems: 1, items: expect.objectContaining({ type: "integer", minimum: 1 }) }),
        confirmed: expect.objectContaining({ type: "boolean", default: false }),
      });
    });

    it("svc_health needs no credentials and returns the same object as GET /health", async () => {
      const health = await api("GET", "/health");
      const result = await call(await connect(), "svc_health");
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual(health.body);
      expect(JSON.parse(textOf(result))).toEqual(health.body);
      expect(health.body).toMatchObject({ status: "healthy", version: expect.any(String) });
    });

    it("answers invalid tool arguments with an isError result naming the problem", async () => {
      const client = await connect({ authorization: `Bearer ${token}` });
      const badAction = await call(client, "svc_collected_data", { action: "export" });
      expect(badAction.isError).toBe(true);
      expect(textOf(badAction)).toMatch(/Input validation error.*action/s);
      const missingIds = await call(client, "svc_collected_data_delete", { confirmed: true });
      expect(missingIds.isError).toBe(true);
      expect(textOf(missingIds)).toMatch(/entity_ids/);
      const getWithoutId = await call(client, "svc_collected_data", { action: "get" });
      expect(getWithoutId.isError).toBe(true);
      expect(textOf(getWithoutId)).toBe("Invalid arguments: entity_id: entity_id is required when action is get");
    });
  });

  describe("authentication", () => {
    it("data tools without credentials answer an isError result saying what to send", async () => {
      const client = await connect();
      for (const [name, args] of [["svc_collected_data", {}], ["svc_collected_data_delete", { entity_ids: [1], confirmed: true }]] as const) {
        const result = await call(client, name, args);
        expect(result.isError).toBe(true);
        expect(textOf(result)).toMatch(/^Authentication required: send Authorization: Bearer <access token or API key>, or X-AUTH-TOKEN/);
        expect(result.structuredContent).toMatchObject({ status: 401 });
      }
    });

    it("refuses an invalid JWT or API key on the data tools; health still answers", async () => {
      const invalid: Record<string, string>[] = [{ authorization: "Bearer not-a-token" }, { authorization: "Basic abc" }, { "x-auth-token": "apk_not-a-key" }];
      for (const headers of invalid) {
        const client = await connect(headers);
        const result = await call(client, "svc_collected_data", { action: "stats" });
        expect(result.isError).toBe(true);
        expect(textOf(result)).toMatch(/^Invalid (or expired token|authorization header|API key); send Authorization: Bearer <access token or API key>, or X-AUTH-TOKEN: <API key>$/);
        expect((await call(client, "svc_health")).isError).toBeFalsy();
      }
    });
  });

  describe("collected data", () => {
    let owner: Client;
    let intruder: Client;
    let accountId: number;
    let intruderAccountId: number;
    const agents: Record<string, { id: number; name: string }> = {};
    const ids: Record<string, number> = {};
    let citedMessageId: number;

    /** Seeds through the entities service's internal action, as the agent runtime does; from the MCP node, over NATS. */
    const record = async (account: number, params: Record<string, unknown>) =>
      (await cluster.brokers[1]!.call<{ id: number }, Record<string, unknown>>("entities.record", params, { meta: { accountId: account } })).id;
    const createAgent = async (name: string, t: string) => {
      const res = await api("POST", "/api/v1/agents", { token: t, body: { name } });
      expect(res.status).toBe(201);
      return res.body as { id: number; name: string; account_id: number };
    };

    beforeAll(async () => {
      const other = (await signup(api, "mcp-intruder")).token;
      const support = await createAgent("Support bot", token);
      const sales = await createAgent("Sales bot", token);
      const foreign = await createAgent("Foreign bot", other);
      accountId = support.account_id;
      intruderAccountId = foreign.account_id;
      Object.assign(agents, { support, sales });

      const messages = await cluster.brokers[1]!.call<{ id: number }[], unknown>(
        "entities.recordSessionMessages",
        { session_id: "chat-1", messages: [{ role: "user", text: "Hi, I am Ada from Analytical Engines" }, { role: "assistant", text: "Welcome, Ada" }] },
        { meta: { accountId } },
      );
      citedMessageId = messages[0]!.id;
      const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();
      // Oldest first, so "newest first" is the reverse of this order.
      ids.old = await record(accountId, { agent_id: sales.id, entity_type_name: "Lead", attributes: { name: "Old Lead" }, created_at: daysAgo(40) });
      ids.ada = await record(accountId, {
        agent_id: support.id,
        entity_type_name: "Lead",
        attributes: { name: "Ada Lovelace", company: "Analytical Engines" },
        confidence_score: 0.9,
        session_id: "chat-1",
        provenance: { name: { message_id: citedMessageId, quote: "I am Ada" } },
        created_at: daysAgo(3),
      });
      ids.grace = await record(accountId, { agent_id: support.id, entity_type_name: "Lead", status: "reviewed", attributes: { name: "Grace Hopper" }, created_at: daysAgo(2) });
      ids.complaint = await record(accountId, { agent_id: sales.id, entity_type_name: "Complaint", status: "archived", attributes: { issue: "late delivery" }, created_at: daysAgo(1) });
      ids.done = await record(accountId, { agent_id: support.id, entity_type_name: "Lead", status: "actioned", attributes: { name: "Done Deal" } });
      ids.foreign = await record(intruderAccountId, { agent_id: foreign.id, entity_type_name: "Lead", attributes: { name: "Not yours" } });

      owner = await connect({ authorization: `Bearer ${token}` });
      intruder = await connect({ authorization: `Bearer ${other}` });
    });

    const data = async (args: Record<string, unknown>, client = owner) => {
      const result = await call(client, "svc_collected_data", args);
      expect(result.isError).toBeFalsy();
      expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
      return result.structuredContent as any;
    };
    const listedIds = (page: { data: { id: number }[] }) => page.data.map((r) => r.id);

    it("lists the caller's records newest first with {total, skip, limit} and no facets by default", async () => {
      const page = await data({});
      expect(listedIds(page)).toEqual([ids.done, ids.complaint, ids.grace, ids.ada, ids.old]);
      expect(page.pagination).toEqual({ total: 5, skip: 0, limit: 10 });
      expect(page).not.toHaveProperty("facets");
      expect(page.data[3]).toMatchObject({
        id: ids.ada,
        entity_type_name: "Lead",
        agent_name: "Support bot",
        status: "new",
        attributes: { name: "Ada Lovelace", company: "Analytical Engines" },
        confidence_score: 0.9,
        created_at: expect.any(String),
        display_name: null,
      });
    });

    it("filters by agent, template (case-insensitive, ignored when unknown), status, search and days, and pages", async () => {
      expect(listedIds(await data({ agent_id: agents.sales!.id }))).toEqual([ids.complaint, ids.old]);
      expect(listedIds(await data({ template_name: "complaint" }))).toEqual([ids.complaint]);
      expect((await data({ template_name: "No such template" })).pagination.total).toBe(5);
      expect(listedIds(await data({ status: "reviewed" }))).toEqual([ids.grace]);
      expect(listedIds(await data({ search: "hopper" }))).toEqual([ids.grace]);
      expect(listedIds(await data({ search: "sales bot" }))).toEqual([ids.complaint, ids.old]);
      expect(listedIds(await data({ days: 30 }))).toEqual([ids.done, ids.complaint, ids.grace, ids.ada]);
      const second = await data({ skip: 1, limit: 2 });
      expect(listedIds(second)).toEqual([ids.complaint, ids.grace]);
      expect(second.pagination).toEqual({ total: 5, skip: 1, limit: 2 });
    });

    it("adds facets with include_facets: types apply the status filter, statuses ignore it and include archived", async () => {
      const page = await data({ include_facets: true, status: "new" });
      expect(listedIds(page)).toEqual([ids.ada, ids.old]);
      expect(page.facets).toEqual({
        entity_types: [{ template_id: null, template_name: "Lead", count: 2 }],
        statuses: { new: 2, reviewed: 1, actioned: 1, archived: 1 },
      });
      const all = await data({ include_facets: true });
      expect(all.facets.entity_types.map((t: { template_name: string; count: number }) => [t.template_name, t.count])).toEqual([["Lead", 4], ["Complaint", 1]]);
    });

    it("gets one record's detail with provenance and session excerpt, ignoring list-only parameters", async () => {
      const detail = await data({ action: "get", entity_id: ids.ada, status: "archived", template_name: "Complaint", skip: 5 });
      expect(detail).toMatchObject({ id: ids.ada, agent_name: "Support bot", provenance: { name: { message_id: citedMessageId, quote: "I am Ada" } } });
      expect(detail.session_excerpt[0]).toMatchObject({ id: citedMessageId, role: "user", text: "Hi, I am Ada from Analytical Engines" });
      expect((await data({ action: "get", entity_id: ids.grace })).session_excerpt).toBeNull();
    });

    it("answers get of another account's record with 403 and of a missing one with 404, as isError results", async () => {
      const foreign = await call(owner, "svc_collected_data", { action: "get", entity_id: ids.foreign });
      expect(foreign.isError).toBe(true);
      expect(foreign.structuredContent).toMatchObject({ status: 403 });
      const missing = await call(owner, "svc_collected_data", { action: "get", entity_id: 987_654 });
      expect(missing.isError).toBe(true);
      expect(missing.structuredContent).toMatchObject({ status: 404 });
      expect(textOf(missing)).toMatch(/not found/);
    });

    it("reports stats all-time or for a window, and per agent with group_by_agent", async () => {
      const stats = await data({ action: "stats" });
      expect(stats).toEqual({
        total: 5,
        status_counts: { new: 2, reviewed: 1, actioned: 1, archived: 1 },
        type_counts: [{ template_id: null, template_name: "Lead", count: 4 }, { template_id: null, template_name: "Complaint", count: 1 }],
        agent_counts: [{ agent_id: agents.support!.id, agent_name: "Support bot", count: 3 }, { agent_id: agents.sales!.id, agent_name: "Sales bot", count: 2 }],
        period_days: null,
      });
      expect(await data({ action: "stats", days: 30 })).toMatchObject({ total: 4, period_days: 30 });
      expect(await data({ action: "stats", agent_id: agents.sales!.id })).toMatchObject({ total: 2 });

      const byAgent = await data({ action: "stats", group_by_agent: true });
      expect(byAgent).toEqual({
        agents: [
          {
            agent_id: agents.support!.id,
            agent_name: "Support bot",
            status_counts: { new: 1, reviewed: 1, actioned: 1, archived: 0 },
            type_counts: [{ template_id: null, template_name: "Lead", count: 3 }],
            total: 3,
          },
          {
            agent_id: agents.sales!.id,
            agent_name: "Sales bot",
            status_counts: { new: 1, reviewed: 0, actioned: 0, archived: 1 },
            type_counts: [{ template_id: null, template_name: "Complaint", count: 1 }, { template_id: null, template_name: "Lead", count: 1 }],
            total: 2,
          },
        ],
        total: 5,
        period_days: null,
      });
    });

    it("passes the entities service's bounds on as isError results (limit over 200)", async () => {
      const result = await call(owner, "svc_collected_data", { limit: 500 });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ status: 422 });
      expect(textOf(result)).toMatch(/^Invalid arguments: limit: /);
    });

    it("accepts an account API key and the master key with X-Account-Id, scoped to that account", async () => {
      const key = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "mcp" } });
      expect(key.status).toBe(201);
      const byKey = await data({ action: "stats" }, await connect({ "x-auth-token": key.body.key }));
      expect(byKey.total).toBe(5);
      // Bearer-only MCP clients send the key as Authorization: Bearer apk_... (issue 23).
      expect((await data({ action: "stats" }, await connect({ authorization: `Bearer ${key.body.key}` }))).total).toBe(5);
      const master = await connect({ "x-auth-token": process.env.MASTER_API_KEY!, "x-account-id": String(intruderAccountId) });
      expect(listedIds(await data({}, master))).toEqual([ids.foreign]);
    });

    it("deletes only after confirmation, skips other accounts' ids, and repeating is harmless", async () => {
      const targets = [ids.complaint, ids.foreign, 987_654];
      const del = (confirmed?: boolean) =>
        call(owner, "svc_collected_data_delete", confirmed === undefined ? { entity_ids: targets } : { entity_ids: targets, confirmed });

      const preview = await del();
      expect(preview.isError).toBeFalsy();
      expect(preview.structuredContent).toEqual({ count: 1, warning: expect.any(String), confirm_instruction: expect.any(String) });
      expect((await data({})).pagination.total).toBe(5);

      expect((await del(true)).structuredContent).toEqual({ deleted: 1 });
      expect(listedIds(await data({}))).toEqual([ids.done, ids.grace, ids.ada, ids.old]);
      expect((await del(true)).structuredContent).toEqual({ deleted: 0 });
      // The other account's record is untouched.
      expect(listedIds(await data({}, intruder))).toEqual([ids.foreign]);
    });
  });

  describe("HTTP surface", () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${mcpUrl}/mcp`, {
        method: "POST",
        headers: { accept: "application/json, text/event-stream", "content-type": "application/json", ...headers },
        body,
      });

    it("answers GET and DELETE /mcp with 405 and a JSON-RPC error (stateless: no sessions, no SSE stream)", async () => {
      for (const method of ["GET", "DELETE"]) {
        const res = await fetch(`${mcpUrl}/mcp`, { method });
        expect(res.status).toBe(405);
        expect(res.headers.get("allow")).toBe("POST");
        expect(await res.json()).toEqual({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null });
      }
    });

    it("serves GET /health without credentials, identical to the gateway's", async () => {
      const res = await fetch(`${mcpUrl}/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual((await api("GET", "/health")).body);
    });

    it("answers a single tools/list POST with plain JSON and no session id", async () => {
      const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect(res.headers.get("mcp-session-id")).toBeNull();
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(((await res.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(6);
    });

    it("refuses non-JSON bodies (415), malformed JSON (400) and bodies over 1 MB (413)", async () => {
      expect((await post("hello", { "content-type": "text/plain" })).status).toBe(415);
      const malformed = await post("{not json");
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { error: { code: number } }).error.code).toBe(-32700);
      const huge = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { pad: "x".repeat(1024 * 1024) } });
      expect((await post(huge)).status).toBe(413);
    });

    it("answers bodies nested 1,000 and 100,000 levels deep below 500", async () => {
      for (const levels of [1_000, 100_000]) {
        const deep = `${"[".repeat(levels)}${"]".repeat(levels)}`;
        for (const body of [
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"svc_health","arguments":{"x":${deep}}}}`,
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"svc_health","arguments":${deep}}}`,
          `{"jsonrpc":"2.0","id":${deep},"method":"ping"}`,
        ]) {
          expect((await post(body)).status).toBeLessThan(500);
        }
      }
    });

    it("answers unknown paths with 404", async () => {
      expect((await fetch(`${mcpUrl}/nothing`)).status).toBe(404);
    });
  });

  describe("through the gateway at /mcp (the API's own address)", () => {
    it("serves the same tools, with credentials checked the same way", async () => {
      const anonymous = await connect({}, cluster.baseUrl);
      const direct = (await (await connect()).listTools()).tools;
      expect((await anonymous.listTools()).tools).toEqual(direct);
      expect(direct.map((t) => t.name).slice(0, 3)).toEqual(["svc_health", "svc_collected_data", "svc_collected_data_delete"]);
      expect(JSON.parse(textOf(await call(anonymous, "svc_health")))).toEqual((await api("GET", "/health")).body);
      expect((await call(anonymous, "svc_collected_data", { action: "stats" })).isError).toBe(true);

      const signedIn = await connect({ authorization: `Bearer ${token}` }, cluster.baseUrl);
      const stats = await call(signedIn, "svc_collected_data", { action: "stats" });
      expect(stats.isError).toBeFalsy();
      expect(stats.structuredContent).toMatchObject({ total: expect.any(Number), period_days: null });
    });

    it("answers GET with 405 and bodies over 1 MB with 413", async () => {
      const get = await fetch(`${cluster.baseUrl}/mcp`);
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST");
      const huge = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { pad: "x".repeat(1024 * 1024) } });
      const res = await fetch(`${cluster.baseUrl}/mcp`, {
        method: "POST",
        headers: { accept: "application/json, text/event-stream", "content-type": "application/json" },
        body: huge,
      });
      expect(res.status).toBe(413);
    });
  });
});
