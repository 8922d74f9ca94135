import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

/** Cached user reads with two users replicas: a write is visible on every replica as soon as it is answered. */
describe("cached user reads over NATS, two users replicas", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    cluster = await startCluster({ database: "users_cache", nodes: [["gateway"], ["users", "api-keys"], ["users"]] });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  /** Enough reads that the gateway's round robin reaches both replicas several times. */
  const readMany = async (path: string, token: string) => Promise.all(Array.from({ length: 8 }, () => api("GET", path, { token })));
  const cachedEntries = () =>
    cluster.brokers.slice(1).map((b) => (b.cacher as unknown as { cache: Map<string, unknown> }).cache.size);

  it("serves repeated reads from each replica's cache", async () => {
    const { token } = await signup(api, "cached");
    const reads = await readMany("/api/v1/users/me", token);
    expect(reads.every((r) => r.status === 200)).toBe(true);
    expect(cachedEntries().every((n) => n > 0)).toBe(true);
  });

  it("an update is read back from every replica at once", async () => {
    const { token, user } = await signup(api, "renamed");
    await readMany("/api/v1/users/me", token);
    await readMany(`/api/v1/users/${user.id}`, token);
    const updated = await api("PUT", "/api/v1/users/me", { token, body: { full_name: "Renamed Person" } });
    expect(updated.status).toBe(200);
    for (const path of ["/api/v1/users/me", `/api/v1/users/${user.id}`]) {
      const reads = await readMany(path, token);
      expect(reads.map((r) => r.body.full_name)).toEqual(Array(8).fill("Renamed Person"));
    }
    expect((await api("PUT", `/api/v1/users/${user.id}`, { token, body: { full_name: "Again" } })).status).toBe(200);
    expect((await readMany("/api/v1/users/me", token)).map((r) => r.body.full_name)).toEqual(Array(8).fill("Again"));
  });

  it("a deleted user's token is refused by every replica at once", async () => {
    const { token, user } = await signup(api, "leaving");
    await readMany("/api/v1/users/me", token);
    expect((await api("DELETE", `/api/v1/users/${user.id}`, { token })).status).toBe(204);
    expect((await readMany("/api/v1/users/me", token)).map((r) => r.status)).toEqual(Array(8).fill(401));
  });
});
