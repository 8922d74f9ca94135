import { execFileSync } from "node:child_process";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, type Api } from "../harness/http";

/** Validates a document with a real OpenAPI 3.1 schema validator (an ES module, so in its own Node process). */
function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const script = `
    import { Validator } from "@seriousme/openapi-schema-validator";
    let input = ""; for await (const chunk of process.stdin) input += chunk;
    const result = await new Validator().validate(JSON.parse(input));
    process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors }));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { input: JSON.stringify(document), cwd: process.cwd() });
  return JSON.parse(out.toString());
}

describe("OpenAPI description over NATS", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    cluster = await startCluster({ database: "openapi" });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  it("serves a valid OpenAPI 3.1.0 document, version 1.0.0, without credentials, at /openapi.json and /api/v1/openapi.json", async () => {
    const root = await api("GET", "/openapi.json");
    expect(root.status).toBe(200);
    expect(root.body).toMatchObject({ openapi: "3.1.0", info: { version: "1.0.0" } });
    expect((await api("GET", "/api/v1/openapi.json")).body).toEqual(root.body);
    expect(validateOpenApi(root.body)).toEqual({ valid: true });
  });

  it("describes the routed endpoints with their path, query and body parameters from the validation schemas", async () => {
    const { paths } = (await api("GET", "/openapi.json")).body;
    expect(Object.keys(paths["/api/v1/agents/{agent_id_or_identifier}"]).sort()).toEqual(["delete", "get", "patch", "put"]);
    const list = paths["/api/v1/agents"].get;
    expect(list.parameters).toEqual(
      expect.arrayContaining([
        { name: "limit", in: "query", required: false, schema: expect.objectContaining({ type: "integer", minimum: 1, maximum: 200, default: 50 }) },
        { name: "sort_order", in: "query", required: false, schema: expect.objectContaining({ enum: ["asc", "desc"], default: "desc" }) },
      ]),
    );
    const signupBody = paths["/api/v1/users"].post.requestBody.content["application/json"].schema;
    expect(signupBody.required).toEqual(expect.arrayContaining(["email", "password"]));
    expect(paths["/api/v1/login/access-token"].post.security).toEqual([]);
    expect(paths["/api/v1/tasks/{task_id}/dependencies/{dependency_id}"].post.parameters.map((p: { name: string }) => p.name)).toEqual(["task_id", "dependency_id"]);
    expect(paths["/api/v1/entities/export"].get).toBeDefined();
    const ids = Object.values(paths).flatMap((ops) => Object.values(ops as Record<string, { operationId: string }>).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(paths["/api/v1/scheduled-tasks/{scheduled_task_id}"].delete).toBeDefined();
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
});
