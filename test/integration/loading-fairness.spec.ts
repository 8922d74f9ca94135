import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { startFixtureSite, type FixtureSite } from "../harness/fixture-site";
import { until } from "../harness/wait";

const ENDED = ["loaded", "partial", "failed"];

describe("loading is fair across accounts: one account's stalled sources never hold up another's", () => {
  let cluster: Cluster;
  let api: Api;
  let stalled: FixtureSite;
  let files: FixtureSite;
  let slowAccount: string;
  let smallAccount: string;

  beforeAll(async () => {
    [stalled, files] = await Promise.all([startFixtureSite("flaky"), startFixtureSite("files")]);
    // Two loader replicas, as deployed: fairness must hold across them, with the usual claims and leases.
    cluster = await startCluster({
      database: "loading_fairness",
      env: { EMBEDDING_PROVIDER: "none" },
      nodes: [["gateway"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"], ["knowledge-loader"]],
    });
    api = apiClient(cluster.baseUrl);
    [slowAccount, smallAccount] = (await Promise.all([signup(api, "fair-slow"), signup(api, "fair-small")])).map((s) => s.token);
  });
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([stalled?.stop(), files?.stop()]);
  });

  const create = async (token: string, body: object) => {
    const res = await api("POST", "/api/v1/knowledge", { token, body });
    expect(res.status).toBe(201);
    return res.body.id as number;
  };
  const source = async (token: string, id: number) => (await api("GET", `/api/v1/knowledge/${id}`, { token })).body;

  it("an account's one-page source loads while another account's sources on a stalled host are still loading", async () => {
    // Each stalled page answers at once and then never finishes its body: every attempt runs into the fetch time limit.
    const slow: number[] = [];
    for (let n = 1; n <= 3; n++) slow.push(await create(slowAccount, { name: `Stalled ${n}`, paths: [`${stalled.baseUrl}/_/endless?n=${n}`], data_type: "text" }));
    // The stalled loads are under way (queued first, claimed first) before the small source is made.
    await until(async () => stalled.hits("/_/endless"), (hits) => hits >= 2, 30_000, "stalled pages requested");

    const small = await create(smallAccount, { name: "Handbook", paths: [`${files.baseUrl}/docs/handbook.md`], data_type: "markdown" });
    const loaded = await until(() => source(smallAccount, small), (s) => ENDED.includes(s.loading_status), 45_000, "the small source's load to end");
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: 1 });

    // The other account's loads were not finished first: they are still stuck on their stalled host.
    for (const id of slow) expect(ENDED).not.toContain((await source(slowAccount, id)).loading_status);
  }, 120_000);
});
