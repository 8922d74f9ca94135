import { execFile } from "node:child_process";
import { WEBHOOK_EVENT_TYPES } from "../../lib/event-types";
import { routedCluster, startCluster, type Cluster } from "../harness/cluster";
import { apiClient, type Api } from "../harness/http";

/**
 * Validates a document with a real OpenAPI 3.1 schema validator (an ES module, so in its own Node process). Run
 * asynchronously: a synchronous child blocked this process's loop for seconds on a loaded machine, and the next
 * request then went out on a keep-alive socket the gateway had already closed (ECONNRESET).
 */
function validateOpenApi(document: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const script = `
    import { Validator } from "@seriousme/openapi-schema-validator";
    let input = ""; for await (const chunk of process.stdin) input += chunk;
    const result = await new Validator().validate(JSON.parse(input));
    process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors }));`;
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: process.cwd(), maxBuffer: 16 << 20 }, (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout)),
    );
    child.stdin!.end(JSON.stringify(document));
  });
}

describe("OpenAPI description over NATS", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    // Every service that serves routes, so the document lists them all.
    cluster = await startCluster(routedCluster("openapi", "search", "knowledge", "webhooks"));
    api = apiClient(cluster.baseUrl);
  }, 60_000);
  afterAll(() => cluster?.stop(), 60_000);

  it("serves a valid OpenAPI 3.1.0 document, version 1.0.0, without credentials, at /openapi.json and /api/v1/openapi.json", async () => {
    const root = await api("GET", "/openapi.json");
    expect(root.status).toBe(200);
    expect(root.body).toMatchObject({ openapi: "3.1.0", info: { version: "1.0.0" } });
    expect((await api("GET", "/api/v1/openapi.json")).body).toEqual(root.body);
    expect(await validateOpenApi(root.body)).toEqual({ valid: true });
  });

  it("describes the routed endpoints with their path, query and body parameters from the validation schemas", async () => {
    const { paths } = (await api("GET", "/openapi.json")).body;
    expect(Object.keys(paths["/api/v1/agents/{agent_id_or_identifier}"]).sort()).toEqual(["delete", "get", "patch", "put"]);
    const list = paths["/api/v1/agents"].get;
    expect(list.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "limit", in: "query", required: false, schema: expect.objectContaining({ type: "integer", minimum: 1, maximum: 200, default: 50 }) }),
        expect.objectContaining({ name: "sort_order", in: "query", required: false, schema: expect.objectContaining({ enum: ["asc", "desc"], default: "desc" }) }),
      ]),
    );
    const signupBody = paths["/api/v1/users"].post.requestBody.content["application/json"].schema;
    expect(signupBody.required).toEqual(expect.arrayContaining(["email", "password"]));
    expect(paths["/api/v1/login/access-token"].post.security).toEqual([]);
    // A user's own routes take a user's token only: an API key acts for an account (403 there).
    for (const [path, method] of [["/api/v1/users/me", "get"], ["/api/v1/users/me", "put"], ["/api/v1/users/me/password", "put"]] as const) {
      expect(paths[path][method].security).toEqual([{ HTTPBearer: [] }]);
    }
    expect(paths["/api/v1/users/{user_id}"].get.security).toBeUndefined();
    expect(paths["/api/v1/tasks/{task_id}/dependencies/{dependency_id}"].post.parameters.map((p: { name: string }) => p.name)).toEqual(["task_id", "dependency_id", "Idempotency-Key"]);
    expect(paths["/api/v1/login/access-token"].post.parameters).toBeUndefined(); // no credentials, so no key
    expect(paths["/api/v1/entities/export"].get).toBeDefined();
    expect(paths["/api/v1/scheduled-tasks/{scheduled_task_id}"].delete).toBeDefined();
  });

  it("states the validators' patterns, URL schemes, base64 and unique items, as they cross the transporter", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const body = (path: string, method: string) => {
      const schema = doc.paths[path][method].requestBody.content["application/json"].schema;
      return schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
    };
    expect(body("/api/v1/agents", "post").properties.identifier).toMatchObject({ pattern: "^(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.-]*$" });
    const document = body("/api/v1/knowledge/{knowledge_source_id}/documents", "post").properties;
    expect(document.url).toMatchObject({ format: "uri", pattern: "^https?://\\S+" });
    expect(document.file.properties.data).toMatchObject({ contentEncoding: "base64", pattern: expect.any(String) });
    expect(body("/api/v1/account-api-keys/{api_key_id}", "put").properties.permissions).toMatchObject({ uniqueItems: true });
  });

  it("declares every success body with a typed schema (lib/resource.ts), pages as {data, pagination}", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const untyped: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }> }>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const [status, success] = Object.entries(operation.responses).find(([code]) => code.startsWith("2"))!;
        const schema = success.content?.["application/json"]?.schema;
        if (status !== "204" && !success.content?.["text/csv"] && (!schema || JSON.stringify(schema) === '{"type":"object"}')) untyped.push(`${method} ${path}`);
      }
    }
    expect(untyped).toEqual([]);
    const agentList = doc.paths["/api/v1/agents"].get.responses["200"].content["application/json"].schema;
    expect(agentList).toMatchObject({ required: ["data", "pagination"], properties: { data: { items: { $ref: "#/components/schemas/Agent" } } } });
    expect(doc.components.schemas.Agent).toMatchObject({ additionalProperties: false, properties: { max_tokens: { type: ["integer", "null"] } } });
  });

  it("names, summarises, tags and describes every operation and parameter (unique ids, none numbered)", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, ...op })),
    );
    const ids = operations.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => /_\d+$/.test(id))).toEqual([]);
    expect(operations.filter((op) => !op.summary).map((op) => op.at)).toEqual([]);
    const declaredTags = new Map((doc.tags as { name: string; description: string }[]).map((t) => [t.name, t.description]));
    expect(operations.filter((op) => op.tags.some((tag) => !declaredTags.get(tag))).map((op) => op.at)).toEqual([]);
    const undescribed = operations.flatMap((op) => (op.parameters ?? []).filter((p) => !p.description).map((p) => `${op.at} ${p.in} ${p.name}`));
    expect(undescribed).toEqual([]);
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    // Aliases: PUT and PATCH, and the interface's two paths of push and pull.
    const byRoute = Object.fromEntries(operations.map((op) => [op.at, op.operationId]));
    expect(byRoute["PATCH /api/v1/agents/{agent_id_or_identifier}"]).toBe("agents.patch");
    expect([byRoute["POST /api/v1/teams/config"], byRoute["POST /api/v1/teams/push"]]).toEqual(["teams.pushConfig", "teams.push"]);
  });

  it("links each create to the operations on the record it made, by the created id", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const ids = new Set(Object.values(doc.paths as Record<string, Record<string, Operation>>).flatMap((ops) => Object.values(ops).map((op) => op.operationId)));
    const links = (path: string) => doc.paths[path].post.responses["201"].links as Record<string, { operationId: string; parameters: Record<string, string> }>;
    expect(links("/api/v1/agents")["agents.update"]).toEqual({ operationId: "agents.update", parameters: { agent_id_or_identifier: "$response.body#/id" } });
    expect(Object.keys(links("/api/v1/agents"))).toEqual(expect.arrayContaining(["agents.get", "agents.patch", "agents.remove", "agents.traits", "agents.attachKnowledgeRetrieval"]));
    expect(Object.keys(links("/api/v1/teams"))).toEqual(expect.arrayContaining(["teams.get", "teams.patch", "teams.remove", "teams.pull"]));
    expect(links("/api/v1/tools")["tools.get"]).toEqual({ operationId: "tools.get", parameters: { tool_id: "$response.body#/id" } });
    // A record made under another takes the create's own path parameters too; a source's create links to the
    // source's routes, not to its documents'.
    expect(links("/api/v1/knowledge/{knowledge_source_id}/documents")["knowledge.replaceDocument"]).toEqual({
      operationId: "knowledge.replaceDocument",
      parameters: { knowledge_source_id: "$request.path.knowledge_source_id", document_id: "$response.body#/id" },
    });
    expect(Object.keys(links("/api/v1/knowledge"))).not.toContain("knowledge.getSourceDocument");
    // Every link names an operation of the document.
    const linked = Object.values(doc.paths as Record<string, Record<string, { responses: Record<string, { links?: object }> }>>).flatMap((ops) =>
      Object.values(ops).flatMap((op) => Object.values((op.responses["201"]?.links ?? {}) as Record<string, { operationId: string }>)),
    );
    expect(linked.filter((link) => !ids.has(link.operationId))).toEqual([]);
  });

  it("declares each enum once in the interface's case, free-form objects as open, and the push body", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content["application/json"].schema;
    const agentCreate = body("/api/v1/agents", "post");
    expect(agentCreate.properties.access_level).toMatchObject({ enum: ["private", "public", "password_protected"] });
    expect(body("/api/v1/teams", "post").properties.access_level).toMatchObject({ enum: ["PRIVATE", "PASSWORD_PROTECTED", "PUBLIC"] });
    // Rule objects shared by several fields reach the gateway whole over the transporter (lib/distinct-schemas.ts).
    for (const field of ["traits", "tools", "knowledge_sources"]) expect(agentCreate.properties[field].items.anyOf).toHaveLength(2);
    expect(body("/api/v1/agents/{agent_id_or_identifier}", "put").properties.tools.items.anyOf).toHaveLength(2);
    expect(body("/api/v1/tasks", "post").properties.input).toEqual({ type: "object", additionalProperties: true });
    expect(body("/api/v1/knowledge/search", "post").properties).toMatchObject({ mode: { enum: ["semantic", "keyword", "hybrid"] }, knowledge_source_ids: { items: { type: "integer" } } });
    expect(body("/api/v1/teams/push", "post")).toEqual({ $ref: "#/components/schemas/TeamConfigurationDocumentInput" });
    const caseTwins: string[] = [];
    const openObjects: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== "object") return;
      const schema = node as Record<string, unknown>;
      const values = Array.isArray(schema.enum) ? schema.enum.filter((v): v is string => typeof v === "string").map((v) => v.toLowerCase()) : [];
      if (new Set(values).size !== values.length) caseTwins.push(at);
      const isObject = schema.type === "object" || (Array.isArray(schema.type) && schema.type.includes("object"));
      if (isObject && !schema.properties && schema.additionalProperties === undefined) openObjects.push(at);
      for (const [key, inner] of Object.entries(schema)) walk(inner, `${at}/${key}`);
    };
    walk(doc, "#");
    expect({ caseTwins, openObjects }).toEqual({ caseTwins: [], openObjects: [] });
    const results = doc.components.schemas.KnowledgeSearchResults.properties.results.items;
    expect(results.required).toEqual(["content", "highlight", "metadata", "score"]);
    // What a citation needs (ADR 0057): ranges always present and nullable, the highlight a string, both described.
    const ranges = { type: ["integer", "null"], description: expect.stringContaining("document's content") };
    expect(results.properties.metadata.properties).toMatchObject({ chunk_start: ranges, chunk_end: ranges });
    expect(results.properties.metadata.required).toEqual(expect.arrayContaining(["document_id", "chunk_index", "chunk_start", "chunk_end"]));
    const documentHit = doc.components.schemas.DocumentSearchResults.properties.results.items;
    expect(documentHit.properties).toMatchObject({ chunk_start: ranges, chunk_end: ranges, highlight: { type: "string", description: expect.stringContaining("<mark>") } });
    expect(documentHit.required).toEqual(expect.arrayContaining(["document_id", "url", "title", "chunk_index", "chunk_start", "chunk_end", "highlight"]));
    expect(doc.components.schemas.DocumentSearchResults.properties.mode_used).toEqual({ enum: ["semantic", "keyword", "hybrid"] });
  });

  it("describes a source's chunking on create, on both update routes and on the source, and its rechunk state (ADR 0059)", async () => {
    const doc = (await api("GET", "/openapi.json")).body;
    const resolve = (schema: { $ref?: string }) => (schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()!] : schema);
    const body = (path: string, method: string) => resolve(doc.paths[path][method].requestBody.content["application/json"].schema);
    const given = {
      type: ["object", "null"],
      description: expect.stringContaining("re-chunks"),
      properties: {
        size: { type: "integer", minimum: 100, maximum: 8000 },
        overlap: { type: "integer", minimum: 0, maximum: 4000, description: expect.stringContaining("half of size") },
        strategy: { enum: ["fixed", "sentence", "heading"], description: expect.stringContaining("<h1>") },
      },
    };
    expect(body("/api/v1/knowledge", "post").properties.chunking).toMatchObject(given);
    for (const method of ["put", "patch"]) expect(body("/api/v1/knowledge/{knowledge_source_id}", method).properties.chunking).toMatchObject(given);
    const source = doc.components.schemas.KnowledgeSource;
    expect(source.properties.chunking).toMatchObject({ type: ["object", "null"], properties: { size: { type: "integer" }, overlap: { type: "integer" }, strategy: { enum: ["fixed", "sentence", "heading"] } } });
    expect(source.properties.rechunk).toMatchObject({ type: ["object", "null"], description: expect.stringContaining("at once"), properties: { status: { enum: ["queued", "running", "done", "failed"] }, job_id: { type: "string" } } });
    expect(source.required).toEqual(expect.arrayContaining(["chunking", "rechunk"]));
  });

  it("types the payload of every webhook event type", async () => {
    const { webhooks, components } = (await api("GET", "/openapi.json")).body;
    expect(Object.keys(webhooks).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    for (const type of WEBHOOK_EVENT_TYPES) {
      const payload = webhooks[type].post.requestBody.content["application/json"].schema;
      expect(payload).toMatchObject({ required: ["type", "timestamp", "data"], properties: { type: { const: type } } });
      const ref: string | undefined = payload.properties.data.$ref;
      if (ref) expect(components.schemas).toHaveProperty(ref.split("/").pop()!);
      else expect(type.endsWith(".deleted")).toBe(true);
    }
  });
});

interface Operation {
  operationId: string;
  summary?: string;
  tags: string[];
  parameters?: { name: string; in: string; description?: string }[];
}
