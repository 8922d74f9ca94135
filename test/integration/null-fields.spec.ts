import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

/**
 * fastest-validator lets null through an optional field; lib/validator.ts removes it, so it means "not given" (docs/adr/0015-security-hardening.md).
 * Each case here answered 500 before (schemathesis found the scheduled-task one).
 */
describe("null in optional fields is taken as not given", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    cluster = await startCluster({ database: "null_fields", nodes: [["gateway"], ["users", "api-keys", "agents", "teams", "tools", "traits", "webhooks"]] });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "nulls")).token;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });

  it("agents: access_level and configuration", async () => {
    const agent = await call("POST", "/agents", { name: "Nully", access_level: null, configuration: null });
    expect(agent.status).toBe(201);
    const updated = await call("PATCH", `/agents/${agent.body.id}`, { access_level: null, configuration: null });
    expect(updated.status).toBe(200);
    expect(updated.body.access_level).toBe(agent.body.access_level);
  });

  it("teams: access_password", async () => {
    const team = await call("POST", "/teams", { name: "Nullable", access_password: null });
    expect(team.status).toBe(201);
    expect((await call("PATCH", `/teams/${team.body.id}`, { access_password: null })).status).toBe(200);
    // A password-protected team still needs a password.
    expect((await call("PATCH", `/teams/${team.body.id}`, { access_level: "PASSWORD_PROTECTED", access_password: null })).status).toBe(400);
  });

  it("webhook subscriptions: url, event_types and enabled on update", async () => {
    const created = await call("POST", "/webhook-subscriptions", { url: "https://hooks.example.com/in", event_types: ["agent.created"] });
    expect(created.status).toBe(201);
    const updated = await call("PATCH", `/webhook-subscriptions/${created.body.id}`, { url: null, event_types: null, enabled: null });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ url: "https://hooks.example.com/in", event_types: ["agent.created"], enabled: true });
  });
});
