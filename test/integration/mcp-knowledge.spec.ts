import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startCluster, type Cluster } from "../harness/cluster";
import { dropSearchCollections, searchEngines } from "../harness/engines";
import { apiClient, signup, type Api } from "../harness/http";
import { until } from "../harness/wait";

/** Pages of the fixture site: distinct words, so each query has a known best page. */
const PAGES: Record<string, string> = {
  volcano: "The volcano erupts molten basalt; volcano slopes hold ash and pumice.",
  glacier: "The glacier carves a valley; glacier ice moves slowly downhill.",
  lagoon: "The lagoon lies behind a reef; lagoon water is calm and shallow.",
};

/** A sitemap site on 127.0.0.1 with the pages above. */
function startSite(): Promise<{ base: string; stop(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const host = `http://${req.headers.host}`;
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const send = (type: string, body: string) => res.writeHead(200, { "content-type": type }).end(body);
    if (path === "/robots.txt") return send("text/plain", `User-agent: *\nSitemap: ${host}/site/sitemap.xml\n`);
    if (path === "/site/sitemap.xml") {
      const locs = Object.keys(PAGES).map((t) => `<url><loc>${host}/site/${t}</loc></url>`).join("");
      return send("application/xml", `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
    }
    const topic = path.replace(/^\/site\//, "");
    if (PAGES[topic]) return send("text/html", `<html lang="en"><head><title>About the ${topic}</title><meta name="description" content="Notes on the ${topic}"></head><body><main><h1>About the ${topic}</h1><p>${PAGES[topic]}</p></main></body></html>`);
    res.writeHead(404).end("not found");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stop: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

/**
 * The knowledge retrieval tools (issue 26, docs/adr/0054-mcp-retrieval-tools.md) through the official SDK
 * client: each answers what its REST route answers, for the caller's account only.
 */
describe.each(searchEngines("mcp_knowledge"))("MCP knowledge retrieval tools over NATS on the $engine engine", ({ engine, env }) => {
  let cluster: Cluster;
  let site: Awaited<ReturnType<typeof startSite>>;
  let api: Api;
  let mcpUrl: string;
  let owner: { token: string };
  let intruder: { token: string };
  let sourceId: number;
  const clients: Client[] = [];

  beforeAll(async () => {
    site = await startSite();
    cluster = await startCluster({
      database: `mcp-knowledge-${engine}`,
      env: { ...env, EMBEDDING_PROVIDER: "none", MCP_PORT: "0", MCP_HOST: "127.0.0.1" },
      nodes: [["gateway"], ["mcp"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"]],
    });
    const mcp = cluster.brokers[1]!.getLocalService("mcp") as unknown as { server: Server };
    mcpUrl = `http://127.0.0.1:${(mcp.server.address() as AddressInfo).port}/mcp`;
    api = apiClient(cluster.baseUrl);
    owner = await signup(api, "mcp-knowledge");
    intruder = await signup(api, "mcp-intruder");
    await until(async () => (await rest("GET", "/knowledge/documents/stats")).status, (s) => s === 200, 20_000, "search routes");
    const created = await rest("POST", "/knowledge", { paths: [`${site.base}/site/`] });
    expect(created.status).toBe(201);
    sourceId = created.body.id;
    await until(async () => (await rest("GET", `/knowledge/${sourceId}`)).body, (s) => s.loading_status === "loaded", 60_000, "source loaded");
    // Keyword hits need the documents indexed; the source is loaded once the index answers for them.
    await until(async () => (await rest("GET", "/knowledge/documents")).body.pagination?.total, (n) => n === 3, 20_000, "documents indexed");
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await cluster?.stop();
    await site?.stop();
    await dropSearchCollections(env);
  });

  const rest = (method: string, path: string, body?: unknown, token = owner.token) => api(method, `/api/v1${path}`, { token, body });

  async function connect(token?: string): Promise<Client> {
    const client = new Client({ name: "mcp-knowledge-spec", version: "1.0.0" });
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
    // listTools caches each tool's output schema: callTool then checks structuredContent against it.
    await client.listTools();
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;
  /** A successful result's structured content, checked against its text twin. */
  function structured(result: CallToolResult): Record<string, unknown> {
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
    return result.structuredContent!;
  }

  it("lists the retrieval tools as read-only, with input schemas from the REST params and output schemas", async () => {
    const { tools } = await (await connect()).listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ["svc_knowledge_search", "svc_knowledge_sources", "svc_knowledge_document"]) {
      expect(byName[name]!.annotations).toEqual({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
      expect(byName[name]!.outputSchema).toMatchObject({ type: "object" });
    }
    const search = byName.svc_knowledge_search!;
    expect(search.inputSchema.required).toEqual(["query"]);
    expect(search.inputSchema.properties).toMatchObject({
      query: { type: "string", minLength: 1, maxLength: 1000 },
      mode: { type: "string", enum: ["semantic", "keyword", "hybrid"], default: "hybrid" },
      source_ids: { type: "array", maxItems: 1000, items: { type: "integer", minimum: 1 } },
      limit: { type: "integer", minimum: 1, maximum: 100, default: 20 },
      offset: { type: "integer", minimum: 0, default: 0 },
    });
    // The filter grammar is recursive: the property refers to its definition.
    expect(JSON.stringify(search.inputSchema.properties!.filters)).toContain("$ref");
    expect(JSON.stringify(search.inputSchema)).toContain('"nin"');
    expect(search.outputSchema!.properties).toMatchObject({ results: { type: "array" }, total: { type: "integer" }, mode_used: { enum: ["semantic", "keyword", "hybrid"] } });
    const sources = byName.svc_knowledge_sources!;
    expect(sources.inputSchema.required ?? []).toEqual([]);
    expect(sources.inputSchema.properties).toMatchObject({
      status: { enum: ["unloaded", "loading", "loaded", "partial", "failed"] },
      sort_by: { enum: ["updated_at", "created_at", "name"], default: "updated_at" },
      sort_order: { enum: ["asc", "desc"], default: "desc" },
      skip: { type: "integer", minimum: 0, default: 0 },
      limit: { type: "integer", minimum: 1, maximum: 200, default: 50 },
    });
    expect(byName.svc_knowledge_document!.inputSchema).toMatchObject({ required: ["document_id"], properties: { document_id: { type: "string", minLength: 1, maxLength: 64 } } });
  });

  describe("each tool answers what its REST route answers", () => {
    it.each(["keyword", "semantic", "hybrid"])("svc_knowledge_search in %s mode equals POST /knowledge/documents/search", async (mode) => {
      const client = await connect(owner.token);
      for (const body of [{ query: "volcano basalt", mode }, { query: "glacier valley", mode, limit: 1 }, { query: "lagoon", mode, source_ids: [sourceId], offset: 0, limit: 5 }]) {
        const expected = await rest("POST", "/knowledge/documents/search", body);
        expect(expected.status).toBe(200);
        expect(structured(await call(client, "svc_knowledge_search", body))).toEqual(expected.body);
      }
      const hit = (await rest("POST", "/knowledge/documents/search", { query: "volcano basalt", mode: "keyword" })).body.results[0];
      expect(hit).toMatchObject({ title: "About the volcano", source_id: sourceId });
      // What a citation needs (ADR 0057), in the tool's answer as in REST's.
      expect(hit).toMatchObject({ document_id: expect.any(String), url: expect.any(String), chunk_index: expect.any(Number) });
      expect(hit).toMatchObject({ chunk_start: expect.any(Number), chunk_end: expect.any(Number), highlight: expect.stringMatching(/<mark>(volcano|basalt)<\/mark>/i) });
    });

    it("svc_knowledge_search applies REST's defaults (hybrid, 20) and a foreign or unknown source id keeps nothing", async () => {
      const client = await connect(owner.token);
      expect(structured(await call(client, "svc_knowledge_search", { query: "volcano" }))).toEqual((await rest("POST", "/knowledge/documents/search", { query: "volcano" })).body);
      const elsewhere = structured(await call(client, "svc_knowledge_search", { query: "volcano", source_ids: [sourceId + 1000] }));
      expect(elsewhere).toMatchObject({ results: [], total: 0 });
    });

    it("svc_knowledge_search with metadata filters equals REST's, applied before ranking (ADR 0058)", async () => {
      const client = await connect(owner.token);
      const glacier = { type: "eq", key: "metadata.title", value: "About the glacier" };
      const notLagoon = { type: "nin", key: "metadata.title", value: ["About the lagoon"] };
      for (const body of [
        { query: "volcano glacier lagoon", mode: "keyword", filters: glacier },
        { query: "volcano glacier lagoon", mode: "hybrid", filters: { type: "or", filters: [glacier, { type: "eq", key: "metadata.title", value: "About the volcano" }] } },
        { query: "volcano glacier lagoon", mode: "keyword", filters: { type: "and", filters: [notLagoon, { type: "eq", key: "source_id", value: sourceId }] } },
      ]) {
        const expected = await rest("POST", "/knowledge/documents/search", body);
        expect(expected.status).toBe(200);
        expect(structured(await call(client, "svc_knowledge_search", body))).toEqual(expected.body);
      }
      // The query matches every page: the filter, not the query, decides which ones come back.
      const only = (await rest("POST", "/knowledge/documents/search", { query: "volcano glacier lagoon", mode: "keyword", filters: glacier })).body;
      expect(only.results.map((r: { title: string }) => r.title)).toEqual(["About the glacier"]);
      const two = (await rest("POST", "/knowledge/documents/search", { query: "volcano glacier lagoon", mode: "keyword", filters: { type: "and", filters: [notLagoon] } })).body;
      expect(two.results.map((r: { title: string }) => r.title).sort()).toEqual(["About the glacier", "About the volcano"]);
      const described = (await rest("POST", "/knowledge/documents/search", { query: "volcano glacier lagoon", mode: "keyword", filters: { type: "and", filters: [{ type: "eq", key: "metadata.language", value: "en" }, { type: "eq", key: "metadata.description", value: "Notes on the lagoon" }] } })).body;
      expect(described.results.map((r: { title: string }) => r.title)).toEqual(["About the lagoon"]);
      // A key outside the grammar: the tool's error is REST's 422 detail.
      const bad = await call(client, "svc_knowledge_search", { query: "volcano", filters: { type: "eq", key: "title", value: "x" } });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/filters\.key|metadata\.<name>/);
    });

    it("svc_knowledge_sources equals GET /knowledge, paging and status filter included", async () => {
      const client = await connect(owner.token);
      for (const [args, query] of [
        [{}, ""],
        [{ status: "loaded", limit: 1, sort_by: "name", sort_order: "asc" }, "?status=loaded&limit=1&sort_by=name&sort_order=asc"],
        [{ status: "failed" }, "?status=failed"],
        [{ skip: 1 }, "?skip=1"],
      ] as const) {
        const expected = await rest("GET", `/knowledge${query}`);
        expect(expected.status).toBe(200);
        expect(structured(await call(client, "svc_knowledge_sources", args))).toEqual(expected.body);
      }
      const page = structured(await call(client, "svc_knowledge_sources"));
      expect(page).toMatchObject({ data: [{ id: sourceId, loading_status: "loaded", document_count: 3, data_type: "sitemap" }], pagination: { total: 1, skip: 0, limit: 50, has_more: false } });
    });

    it("svc_knowledge_document equals GET /knowledge/documents/{document_id}", async () => {
      const client = await connect(owner.token);
      const listed = (await rest("GET", "/knowledge/documents")).body.data as { id: string }[];
      expect(listed).toHaveLength(3);
      for (const { id } of listed) {
        const expected = await rest("GET", `/knowledge/documents/${id}`);
        expect(expected.status).toBe(200);
        expect(structured(await call(client, "svc_knowledge_document", { document_id: id }))).toEqual(expected.body);
      }
      const hit = (await rest("POST", "/knowledge/documents/search", { query: "lagoon reef", mode: "keyword" })).body.results[0];
      const document = structured(await call(client, "svc_knowledge_document", { document_id: hit.document_id }));
      expect(document).toMatchObject({ id: hit.document_id, source_id: sourceId, title: "About the lagoon", content: expect.stringContaining("lagoon water is calm") });
      // A loaded page's metadata: where it came from, and what the page says of itself.
      expect(document.metadata).toMatchObject({ source: "sitemap", title: "About the lagoon", url: expect.stringMatching(/\/site\/lagoon$/), language: "en", description: "Notes on the lagoon" });
    });
  });

  describe("account scoping", () => {
    it("another account sees none of the sources or documents, and is refused a document id as REST refuses it", async () => {
      const client = await connect(intruder.token);
      const documentId = (await rest("GET", "/knowledge/documents")).body.data[0].id as string;

      const sources = structured(await call(client, "svc_knowledge_sources"));
      expect(sources).toEqual((await rest("GET", "/knowledge", undefined, intruder.token)).body);
      expect(sources).toMatchObject({ data: [], pagination: { total: 0 } });

      for (const args of [{ query: "volcano", mode: "keyword" }, { query: "volcano", source_ids: [sourceId] }]) {
        const found = structured(await call(client, "svc_knowledge_search", args));
        expect(found).toEqual((await rest("POST", "/knowledge/documents/search", args, intruder.token)).body);
        expect(found).toMatchObject({ results: [], total: 0 });
      }

      // REST answers another account's record 403 (the platform's tenancy rule); the tool says the same, no content.
      const refused = await rest("GET", `/knowledge/documents/${documentId}`, undefined, intruder.token);
      expect(refused.status).toBe(403);
      const foreign = await call(client, "svc_knowledge_document", { document_id: documentId });
      expect(foreign.isError).toBe(true);
      expect(foreign.structuredContent).toBeUndefined();
      expect(textOf(foreign)).toBe(refused.body.detail);
      expect(textOf(foreign)).not.toContain("volcano");
    });

    it("answers an unknown document id with an isError result saying not found", async () => {
      const result = await call(await connect(owner.token), "svc_knowledge_document", { document_id: "no-such-document" });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/not found/i);
      expect(textOf(result)).toBe((await rest("GET", "/knowledge/documents/no-such-document")).body.detail);
    });

    it("refuses every retrieval tool without credentials, saying what to send", async () => {
      const client = await connect();
      for (const [name, args] of [["svc_knowledge_search", { query: "volcano" }], ["svc_knowledge_sources", {}], ["svc_knowledge_document", { document_id: "x" }]] as const) {
        const result = await call(client, name, args);
        expect(result.isError).toBe(true);
        expect(textOf(result)).toMatch(/^Authentication required: send Authorization: Bearer/);
      }
    });
  });

  describe("validation", () => {
    it("answers arguments outside the REST bounds with isError results naming the field", async () => {
      const client = await connect(owner.token);
      for (const [name, args, field] of [
        ["svc_knowledge_search", {}, "query"],
        ["svc_knowledge_search", { query: "" }, "query"],
        ["svc_knowledge_search", { query: "x".repeat(1001) }, "query"],
        ["svc_knowledge_search", { query: "volcano", mode: "fuzzy" }, "mode"],
        ["svc_knowledge_search", { query: "volcano", limit: 101 }, "limit"],
        ["svc_knowledge_search", { query: "volcano", source_ids: [0] }, "source_ids"],
        ["svc_knowledge_sources", { limit: 201 }, "limit"],
        ["svc_knowledge_sources", { status: "ready" }, "status"],
        ["svc_knowledge_document", {}, "document_id"],
        ["svc_knowledge_document", { document_id: "x".repeat(65) }, "document_id"],
      ] as const) {
        const result = await call(client, name, args);
        expect(result.isError).toBe(true);
        expect(textOf(result)).toMatch(new RegExp(`Input validation error.*${field}`, "s"));
      }
    });
  });
});
