import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, uniqueEmail, type Api, type ApiResponse } from "../harness/http";

/**
 * Credential throttling under concurrency (issue 25, items 2 to 4): every attempt is counted before its password
 * is checked, in the database, so parallel guesses through two users replicas never check more passwords than
 * the limits allow, and a burst from one address cannot hold up other people's logins. Each test guesses from
 * addresses of its own (X-Forwarded-For behind one trusted proxy), so the per-address budgets do not mix.
 */
describe("throttling under concurrency, across two users replicas", () => {
  jest.setTimeout(180_000);
  let cluster: Cluster;
  let api: Api;
  let subnet = 0;

  beforeAll(async () => {
    const core = ["users", "api-keys", "agents", "tools", "traits", "teams", "tasks", "entities"];
    cluster = await startCluster({ database: "login_throttle", env: { TRUSTED_PROXIES: "1" }, nodes: [["gateway"], core, ["users"]] });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  /** A fresh /16 of addresses for one test: `address(i)` is its i-th client. */
  function addresses() {
    subnet += 1;
    return (i = 0) => `10.${subnet}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  }

  const login = (email: string, password: string, from: string) =>
    api("POST", "/api/v1/login/access-token", { body: { email, password }, headers: { "x-forwarded-for": from } });

  /** Every answer is a checked password (401) or a refusal with Retry-After (429); returns how many were checked. */
  function checkedPasswords(answers: ApiResponse[]): number {
    for (const res of answers) {
      expect([401, 429]).toContain(res.status);
      if (res.status === 429) expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    return answers.filter((res) => res.status === 401).length;
  }

  it("41 simultaneous wrong logins for one email check at most 10 passwords; then even the right one is refused", async () => {
    const { email, password } = await signup(api, "parallel");
    const from = addresses();
    const answers = await Promise.all(Array.from({ length: 41 }, (_, i) => login(email, `wrong-${i}`, from(i))));
    const checked = checkedPasswords(answers);
    expect(checked).toBeGreaterThan(0);
    expect(checked).toBeLessThanOrEqual(10);
    expect((await login(email, password, from(99))).status).toBe(429);
  });

  it("151 simultaneous wrong logins from one address check at most 50 passwords", async () => {
    const from = addresses()();
    const answers = await Promise.all(Array.from({ length: 151 }, () => login(uniqueEmail("spray"), "guess-guess", from)));
    expect(checkedPasswords(answers)).toBeLessThanOrEqual(50);
    // Sequential guesses take the rest of the budget; then the address is refused.
    let status = 401;
    for (let i = 0; i < 60 && status === 401; i++) status = (await login(uniqueEmail("spray"), "guess-guess", from)).status;
    expect(status).toBe(429);
  });

  it("a right password gives its place back: an address's right logins never use up its budget", async () => {
    const owner = await signup(api, "regular");
    const from = addresses()();
    const statuses: number[] = [];
    for (let i = 0; i < 45; i++) statuses.push((await login(uniqueEmail("typo"), "guess-guess", from)).status);
    for (let i = 0; i < 10; i++) statuses.push((await login(owner.email, owner.password, from)).status);
    for (let i = 0; i < 6; i++) statuses.push((await login(uniqueEmail("typo"), "guess-guess", from)).status);
    expect(statuses).toEqual([...Array(45).fill(401), ...Array(10).fill(200), ...Array(5).fill(401), 429]);
  });

  it("a burst of 120 logins from one address is refused fast beyond a few hashes, and another address logs in meanwhile", async () => {
    const owner = await signup(api, "bystander");
    const from = addresses();
    const burst = Promise.all(Array.from({ length: 120 }, () => login(uniqueEmail("burst"), "guess-guess", from(0))));
    const bystander = await login(owner.email, owner.password, from(1));
    const answers = await burst;
    expect(bystander.status).toBe(200);
    expect(checkedPasswords(answers)).toBeLessThanOrEqual(50);
    // Only a few of the burst's hashes run or wait at once: the others were refused before hashing.
    const busy = answers.filter((res) => res.status === 429 && /in progress/.test(res.body.detail));
    expect(busy.length).toBeGreaterThan(0);
  });

  it("wrong current passwords on a password change are throttled like failed logins", async () => {
    const { token, password } = await signup(api, "changer");
    const from = addresses()();
    const change = (current: string) =>
      api("PUT", "/api/v1/users/me/password", { token, body: { current_password: current, new_password: "brand-new-password" }, headers: { "x-forwarded-for": from } });
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push((await change(`wrong-${i}`)).status);
    expect(statuses).toEqual([...Array(10).fill(422), 429]);
    const right = await change(password);
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("simultaneous wrong current passwords check at most 10", async () => {
    const { token } = await signup(api, "parallel-changer");
    const from = addresses();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api("PUT", "/api/v1/users/me/password", { token, body: { current_password: `wrong-${i}`, new_password: "brand-new-password" }, headers: { "x-forwarded-for": from(i) } }),
      ),
    );
    for (const res of answers) expect([422, 429]).toContain(res.status);
    expect(answers.filter((res) => res.status === 422).length).toBeLessThanOrEqual(10);
  });
});
