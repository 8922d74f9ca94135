import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

/** Unknown body fields answer 422 naming them (Stripe's habit); every field the interface defines stays accepted. */
describe("unknown body fields", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    // Every routed service, so every body the API takes is checked.
    cluster = await startCluster({
      database: "unknown_fields",
      env: { EMBEDDING_PROVIDER: "none" },
      nodes: [["gateway"], ["users", "api-keys", "agents", "tools", "traits", "teams", "entities", "tasks", "webhooks", "knowledge", "search"]],
    });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "typos")).token;
  });
  afterAll(() => cluster?.stop());

  const call = (method: string, path: string, body: unknown) => api(method, `/api/v1${path}`, { token, body });
  const unknownLocs = (body: { detail: { loc: (string | number)[]; type: string }[] }) =>
    body.detail.filter((d) => d.type === "extra_forbidden").map((d) => d.loc.join("."));

  it("POST /agents with a typo answers 422 naming the field and the one meant, and creates nothing", async () => {
    const res = await call("POST", "/agents", { name: "Typo bot", instruction: "Be brief" });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ["body", "instruction"], msg: "Unknown field 'instruction'; did you mean 'instructions'?", type: "extra_forbidden" }]);
    expect((await call("GET", "/agents", undefined)).body.pagination.total).toBe(0);
  });

  it("names every unknown field of a body, on updates too", async () => {
    const agent = await call("POST", "/agents", { name: "Strict bot", instructions: "Be brief" });
    expect(agent.status).toBe(201);
    const res = await call("PATCH", `/agents/${agent.body.id}`, { temprature: 0.2, colour: "red" });
    expect(res.status).toBe(422);
    expect(unknownLocs(res.body).sort()).toEqual(["body.colour", "body.temprature"]);
    expect(res.body.detail.find((d: { loc: string[] }) => d.loc[1] === "temprature").msg).toMatch(/did you mean 'temperature'/);
  });

  it("every POST, PUT and PATCH that declares its body refuses an unknown field", async () => {
    type BodySchema = { additionalProperties?: unknown; $ref?: string };
    type Operation = { requestBody?: { content: Record<string, { schema: BodySchema }> } };
    const doc = (await api("GET", "/openapi.json")).body as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, BodySchema> } };
    const named = (schema: BodySchema) => (schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()!]! : schema);
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([method, op]) => ["post", "put", "patch"].includes(method) && op.requestBody)
        // The document says so too, so generated clients and schemathesis send declared fields only.
        .filter(([, op]) => expect(named(op.requestBody!.content["application/json"]!.schema).additionalProperties).toBe(false) ?? true)
        .map(([method, op]) => {
          // Team push reads a whole document and answers its problems with the interface's 400.
          const status = op.requestBody!.content["application/json"]!.schema.$ref?.endsWith("/TeamConfigurationDocumentInput") ? 400 : 422;
          return [method.toUpperCase(), path.replace("/api/v1", "").replace(/\{\w+\}/g, "1"), status] as const;
        }),
    );
    expect(operations.length).toBeGreaterThan(35);
    const refused = [];
    for (const [method, path] of operations) {
      const res = await call(method, path, { zz_not_a_field: 1 });
      refused.push(`${method} ${path} ${res.status} ${res.status === 422 ? unknownLocs(res.body).join() : ""}`);
    }
    expect(refused).toEqual(operations.map(([method, path, status]) => `${method} ${path} ${status} ${status === 422 ? "body.zz_not_a_field" : ""}`));
  });

  it("takes back what it answered: a record read, changed and sent back whole is accepted", async () => {
    const team = await call("POST", "/teams", { name: "Round trip", configuration: { anything: { goes: [1] } } });
    expect(team.status).toBe(201);
    const { agents: _agents, ...teamBack } = team.body;
    expect((await call("PUT", `/teams/${team.body.id}`, { ...team.body, description: "changed" })).body).toMatchObject({ id: team.body.id, description: "changed" });
    expect((await call("PUT", `/teams/${team.body.id}`, teamBack)).status).toBe(200);

    const tool = await call("POST", "/tools", { name: "Echo", identifier: "echo", tool_type: "function", configuration: { free: "form" } });
    const updated = await call("PUT", `/tools/${tool.body.id}`, { ...tool.body, name: "Echo 2" });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: tool.body.id, name: "Echo 2", account_id: tool.body.account_id });
  });

  it("keeps free-form objects free-form and takes documented aliases", async () => {
    const agent = await call("POST", "/agents", {
      name: "Free form",
      configuration: { chat_ui: { greeting: "Hi" }, whatever: { nested: true } },
      access_level: "PRIVATE",
    });
    expect(agent.status).toBe(201);
    const task = await call("POST", "/tasks", { title: "Free input", input: { any: { key: 1 } } });
    expect(task.status).toBe(201);
    const entity = await call("POST", "/entities", { agent_id: agent.body.id, entity_type_name: "Lead", attributes: { made_up: "yes" } });
    expect(entity.status).toBe(201);
  });

  it("objects the interface defines field by field refuse unknown fields too (refresh, task_template)", async () => {
    const source = await api("POST", "/api/v1/knowledge?auto_load=false", {
      token,
      body: { paths: ["https://example.com/a"], data_type: "website", refresh: { interval_seconds: 3600, prun: false } },
    });
    expect(source.status).toBe(422);
    expect(source.body.detail).toEqual([{ loc: ["body", "refresh"], msg: expect.stringMatching(/^Unknown fields: prun; /), type: "objectStrict" }]);
  });

  it("team push refuses unknown fields in its document with the interface's 400, free-form parts aside; pull pushes back", async () => {
    const doc = {
      name: "Pushed team",
      agents: [
        {
          name: "Pusher",
          model: "gpt-4o-mini",
          publication: { access_level: "public" },
          configuration: { chat_ui: { greeting: "Hi" }, routing: { any: "thing" } },
          events: [{ type: "email.received", config: { mailbox: "x@example.com" } }],
        },
      ],
      tools: [{ name: "Lookup", type: "mcp", config: { server_name: "crm", extra: [1] } }],
      overrides: { global: { temperature: 0.3 } },
    };
    const typos = { ...doc, nmae: "x", agents: [{ ...doc.agents[0], instruction: "Be brief", publication: { access_level: "public", pasword: "secret-123" } }] };
    const refused = await call("POST", "/teams/push", typos);
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((e: { loc: unknown[]; msg: string }) => `${e.loc.join(".")} ${e.msg.split(";")[0]}`).sort()).toEqual([
      "body Unknown fields: nmae",
      "body.agents.0 Unknown fields: instruction",
      "body.agents.0.publication Unknown fields: pasword",
    ]);
    const pushed = await call("POST", "/teams/push", doc);
    expect(pushed.status).toBe(200);
    const pulled = await call("GET", `/teams/${pushed.body.identifier}/pull`, undefined);
    expect(pulled.status).toBe(200);
    expect((await call("POST", "/teams/push", pulled.body)).status).toBe(200);
  });
});
