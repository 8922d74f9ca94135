import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

describe("embedded default: every service in one broker, no transporter", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    cluster = await startCluster({ database: "embedded", embedded: true });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  it("runs with a single broker", () => {
    expect(cluster.brokers).toHaveLength(1);
    expect(cluster.brokers[0]!.transit).toBeFalsy();
  });

  it("serves health, signup, JWT and API-key calls like the cluster does", async () => {
    expect((await api("GET", "/health")).body.status).toBe("healthy");
    const { token, user } = await signup(api, "embedded");
    const key = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "local" } });
    expect(key.status).toBe(201);
    expect(key.headers.get("location")).toBe(`/api/v1/account-api-keys/${key.body.id}`);
    const viaKey = await api("GET", `/api/v1/users/${user.id}`, { apiKey: key.body.key });
    expect(viaKey.status).toBe(200);
    expect(viaKey.body.email).toBe(user.email);
  });
});
