import { request } from "node:http";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, uniqueEmail, type Api } from "../harness/http";

/** Findings of the external security probe (issue #11), each pinned by a test that failed before its fix. */
describe("security over NATS: users, sessions, throttling, malformed requests", () => {
  let cluster: Cluster;
  let api: Api;

  beforeAll(async () => {
    cluster = await startCluster({ database: "security" });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  /** Adds a user to the owner's account and returns its id and token. */
  async function addUser(ownerToken: string, role?: string) {
    const res = await api("POST", "/api/v1/users/", {
      token: ownerToken,
      body: { email: uniqueEmail("member"), password: "long-enough-pw", ...(role ? { role } : {}) },
    });
    expect(res.status).toBe(201);
    return { id: res.body.id as number, token: res.body.access_token as string, email: res.body.email as string };
  }

  describe("account takeover (finding 1)", () => {
    it("an API key without users:manage cannot mint a login", async () => {
      const owner = await signup(api, "keyowner");
      const key = (await api("POST", "/api/v1/account-api-keys", { token: owner.token, body: { name: "ci" } })).body.key;
      const res = await api("POST", "/api/v1/users/", { apiKey: key, body: { email: uniqueEmail("minted"), password: "long-enough-pw" } });
      expect(res.status).toBe(403);
      expect(res.body.detail).toMatch(/users:manage/);
    });

    it("only owners and admins give keys users:manage; such a key adds members", async () => {
      const owner = await signup(api, "grantor");
      const member = await addUser(owner.token);
      const refused = await api("POST", "/api/v1/account-api-keys", { token: member.token, body: { name: "x", permissions: ["users:manage"] } });
      expect(refused.status).toBe(403);
      const plain = (await api("POST", "/api/v1/account-api-keys", { token: owner.token, body: { name: "plain" } })).body;
      expect((await api("PUT", `/api/v1/account-api-keys/${plain.id}`, { apiKey: plain.key, body: { permissions: ["users:manage"] } })).status).toBe(403);
      const created = await api("POST", "/api/v1/account-api-keys", { token: owner.token, body: { name: "provisioner", permissions: ["users:manage"] } });
      expect(created.status).toBe(201);
      expect(created.body.permissions).toEqual(["users:manage"]);
      const added = await api("POST", "/api/v1/users/", { apiKey: created.body.key, body: { email: uniqueEmail("provisioned"), password: "long-enough-pw" } });
      expect(added.status).toBe(201);
      expect(added.body.role).toBe("member");
      // The key acts as an admin, not an owner: it can neither create admins nor touch the owner.
      const admin = await api("POST", "/api/v1/users/", { apiKey: created.body.key, body: { email: uniqueEmail("adm"), password: "long-enough-pw", role: "admin" } });
      expect(admin.status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${owner.user.id}`, { apiKey: created.body.key, body: { email: uniqueEmail("stolen") } })).status).toBe(403);
    });

    it("a member changes only themselves: not the owner's email, not another member, not their own role", async () => {
      const owner = await signup(api, "victim");
      const member = await addUser(owner.token);
      const other = await addUser(owner.token);
      expect((await api("PUT", `/api/v1/users/${owner.user.id}`, { token: member.token, body: { email: uniqueEmail("attacker") } })).status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${other.id}`, { token: member.token, body: { full_name: "x" } })).status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { token: member.token, body: { role: "owner" } })).status).toBe(403);
      expect((await api("POST", "/api/v1/users/", { token: member.token, body: { email: uniqueEmail("m"), password: "long-enough-pw" } })).status).toBe(403);
      const self = await api("PUT", `/api/v1/users/${member.id}`, { token: member.token, body: { full_name: "Me" } });
      expect(self.status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { token: owner.token })).body.email).toBe(owner.email);
      expect((await api("GET", `/api/v1/users/${owner.user.id}`, { token: member.token })).status).toBe(200);
    });

    it("owners manage roles; admins manage members but not owners", async () => {
      const owner = await signup(api, "boss");
      expect(owner.user.role).toBe("owner");
      const admin = await addUser(owner.token, "admin");
      const member = await addUser(admin.token);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { token: admin.token, body: { full_name: "Renamed" } })).status).toBe(200);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { token: admin.token, body: { role: "admin" } })).status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${owner.user.id}`, { token: admin.token, body: { full_name: "x" } })).status).toBe(403);
      const promoted = await api("PUT", `/api/v1/users/${member.id}`, { token: owner.token, body: { role: "admin" } });
      expect(promoted.status).toBe(200);
      expect(promoted.body.role).toBe("admin");
    });

    it("records who changed which user and when", async () => {
      const owner = await signup(api, "audited");
      const member = await addUser(owner.token);
      await api("PUT", `/api/v1/users/${member.id}`, { token: owner.token, body: { full_name: "New Name" } });
      expect((await api("GET", "/api/v1/users/audit-log", { token: member.token })).status).toBe(403);
      const log = await api("GET", `/api/v1/users/audit-log?user_id=${member.id}`, { token: owner.token });
      expect(log.status).toBe(200);
      expect(log.body.data.map((e: { action: string }) => e.action)).toEqual(["user.updated", "user.created"]);
      expect(log.body.data[0]).toMatchObject({ actor_type: "user", actor_user_id: owner.user.id, target_user_id: member.id, fields: ["full_name"] });
      expect(Date.parse(log.body.data[0].at)).not.toBeNaN();
    });
  });

  describe("key lifecycle (issue 25, item 5)", () => {
    const createKey = (token: string, body: object = {}) => api("POST", "/api/v1/account-api-keys", { token, body: { name: "k", ...body } });

    it("keys record who made them; owners and admins list and revoke a person's keys in one call", async () => {
      const owner = await signup(api, "offboarder");
      const admin = await addUser(owner.token, "admin");
      const member = await addUser(owner.token);
      const own = (await createKey(member.token)).body;
      expect(own).toMatchObject({ created_by_user_id: member.id, created_by_api_key_id: null });
      // A key made with the member's key is the member's too: it goes with them.
      const chained = (await api("POST", "/api/v1/account-api-keys", { apiKey: own.key, body: { name: "made by a key" } })).body;
      expect(chained).toMatchObject({ created_by_user_id: member.id, created_by_api_key_id: own.id });
      const ownerKey = (await createKey(owner.token)).body;
      const listed = await api("GET", `/api/v1/account-api-keys?created_by_user_id=${member.id}`, { token: admin.token });
      expect(listed.status).toBe(200);
      expect(listed.body.map((k: { id: number }) => k.id)).toEqual([own.id, chained.id]);
      const revoke = (token: string) => api("POST", "/api/v1/account-api-keys/revoke", { token, body: { created_by_user_id: member.id } });
      expect((await revoke(member.token)).status).toBe(403);
      const revoked = await revoke(admin.token);
      expect(revoked.status).toBe(200);
      expect(revoked.body).toEqual({ revoked: 2, ids: [own.id, chained.id] });
      for (const key of [own.key, chained.key]) expect((await api("GET", "/api/v1/agents", { apiKey: key })).status).toBe(401);
      expect((await api("GET", "/api/v1/agents", { apiKey: ownerKey.key })).status).toBe(200);
      expect((await api("GET", `/api/v1/account-api-keys?created_by_user_id=${member.id}`, { token: owner.token })).body).toEqual([]);
    });

    it("disabling a user keeps their keys unless asked to revoke them", async () => {
      const owner = await signup(api, "disabling");
      const kept = await addUser(owner.token);
      const revoked = await addUser(owner.token);
      const keptKey = (await createKey(kept.token)).body.key;
      const revokedKey = (await createKey(revoked.token)).body.key;
      expect((await api("PUT", `/api/v1/users/${kept.id}`, { token: owner.token, body: { is_active: false } })).status).toBe(200);
      expect((await api("GET", "/api/v1/agents", { apiKey: keptKey })).status).toBe(200);
      const alone = await api("PUT", `/api/v1/users/${revoked.id}`, { token: owner.token, body: { revoke_api_keys: true } });
      expect(alone.status).toBe(422);
      // A users:manage key disables members but does not revoke keys; refused, it changes nothing.
      const manager = (await createKey(owner.token, { permissions: ["users:manage"] })).body.key;
      const byKey = await api("PUT", `/api/v1/users/${revoked.id}`, { apiKey: manager, body: { is_active: false, revoke_api_keys: true } });
      expect(byKey.status).toBe(403);
      expect((await api("GET", `/api/v1/users/${revoked.id}`, { token: owner.token })).body.is_active).toBe(true);
      const disabled = await api("PUT", `/api/v1/users/${revoked.id}`, { token: owner.token, body: { is_active: false, revoke_api_keys: true } });
      expect(disabled.status).toBe(200);
      expect(disabled.body.is_active).toBe(false);
      expect((await api("GET", "/api/v1/agents", { apiKey: revokedKey })).status).toBe(401);
    });

    it("changing or deleting a key that holds a permission needs the rights to grant it", async () => {
      const owner = await signup(api, "privileged");
      const member = await addUser(owner.token);
      const privileged = (await createKey(owner.token, { permissions: ["users:manage"] })).body;
      expect((await api("PUT", `/api/v1/account-api-keys/${privileged.id}`, { token: owner.token, body: { status: "inactive" } })).status).toBe(200);
      const plain = (await createKey(owner.token)).body;
      for (const caller of [{ token: member.token }, { apiKey: plain.key }, { token: plain.key }]) {
        expect((await api("PUT", `/api/v1/account-api-keys/${privileged.id}`, { ...caller, body: { status: "active" } })).status).toBe(403);
        expect((await api("PUT", `/api/v1/account-api-keys/${privileged.id}`, { ...caller, body: { name: "renamed" } })).status).toBe(403);
        expect((await api("DELETE", `/api/v1/account-api-keys/${privileged.id}`, caller)).status).toBe(403);
      }
      expect((await api("GET", `/api/v1/account-api-keys/${privileged.id}`, { token: owner.token })).body).toMatchObject({ status: "inactive", name: "k" });
      // Keys without permissions stay anyone's to manage; owners and admins manage privileged ones.
      expect((await api("PUT", `/api/v1/account-api-keys/${plain.id}`, { token: member.token, body: { name: "renamed" } })).status).toBe(200);
      expect((await api("PUT", `/api/v1/account-api-keys/${privileged.id}`, { token: owner.token, body: { status: "active" } })).status).toBe(200);
      expect((await api("DELETE", `/api/v1/account-api-keys/${privileged.id}`, { token: owner.token })).status).toBe(204);
    });

    it("a key with users:manage manages members only, not admins", async () => {
      const owner = await signup(api, "keymanager");
      const admin = await addUser(owner.token, "admin");
      const member = await addUser(owner.token);
      const key = (await createKey(owner.token, { permissions: ["users:manage"] })).body.key;
      for (const body of [{ full_name: "Renamed" }, { email: uniqueEmail("taken-over") }, { is_active: false }]) {
        expect((await api("PUT", `/api/v1/users/${admin.id}`, { apiKey: key, body })).status).toBe(403);
      }
      expect((await api("GET", `/api/v1/users/${admin.id}`, { token: owner.token })).body).toMatchObject({ is_active: true, email: admin.email });
      expect((await api("PUT", `/api/v1/users/${member.id}`, { apiKey: key, body: { full_name: "Renamed" } })).status).toBe(200);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { apiKey: key, body: { is_active: false } })).status).toBe(200);
    });
  });

  describe("API keys as Bearer (issue 23)", () => {
    it("an account key works as Authorization: Bearer apk_..., and stops with the key", async () => {
      const owner = await signup(api, "bearerkey");
      const key = (await api("POST", "/api/v1/account-api-keys", { token: owner.token, body: { name: "bearer" } })).body;
      const created = await api("POST", "/api/v1/agents", { token: key.key, body: { name: "By bearer key" } });
      expect(created.status).toBe(201);
      expect((await api("GET", `/api/v1/agents/${created.body.id}`, { token: key.key })).status).toBe(200);
      // A key acts for the account, not a user, whichever header carries it.
      expect((await api("GET", "/api/v1/users/me", { token: key.key })).status).toBe(403);
      expect((await api("PUT", `/api/v1/account-api-keys/${key.id}`, { token: owner.token, body: { status: "inactive" } })).status).toBe(200);
      const refused = await api("GET", "/api/v1/agents", { token: key.key });
      expect(refused.status).toBe(401);
      expect(refused.body.detail).toMatch(/inactive/);
    });

    it("401 details say which credentials are accepted", async () => {
      for (const headers of [{}, { authorization: "Bearer apk_not-a-key" }, { authorization: "Bearer not-a-jwt" }, { authorization: "Basic abc" }, { "x-auth-token": "apk_nope" }] as Record<string, string>[]) {
        const res = await api("GET", "/api/v1/agents", { headers });
        expect(res.status).toBe(401);
        expect(res.body.detail).toMatch(/Authorization: Bearer <access token or API key>.*X-AUTH-TOKEN: <API key>/);
      }
    });
  });

  describe("sessions end with their user (finding 3)", () => {
    it("a deleted user's token stops working at once", async () => {
      const { token, user } = await signup(api, "deleted");
      expect((await api("DELETE", `/api/v1/users/${user.id}`, { token })).status).toBe(204);
      expect((await api("POST", "/api/v1/agents", { token, body: { name: "After delete" } })).status).toBe(401);
    });

    it("a password change ends the old tokens and returns a new one", async () => {
      const { token, email, password } = await signup(api, "rotating");
      const wrong = await api("PUT", "/api/v1/users/me/password", { token, body: { current_password: "not-it-at-all", new_password: "brand-new-password" } });
      expect(wrong.status).toBe(422);
      const changed = await api("PUT", "/api/v1/users/me/password", { token, body: { current_password: password, new_password: "brand-new-password" } });
      expect(changed.status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { token })).status).toBe(401);
      expect((await api("GET", "/api/v1/users/me", { token: changed.body.access_token })).status).toBe(200);
      expect((await api("POST", "/api/v1/login/access-token", { body: { email, password } })).status).toBe(401);
      expect((await api("POST", "/api/v1/login/access-token", { body: { email, password: "brand-new-password" } })).status).toBe(200);
    });

    it("disabling a user ends its tokens; it cannot log in until enabled", async () => {
      const owner = await signup(api, "disabler");
      const member = await addUser(owner.token);
      expect((await api("GET", "/api/v1/users/me", { token: member.token })).status).toBe(200);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { token: owner.token, body: { is_active: false } })).status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { token: member.token })).status).toBe(401);
      expect((await api("POST", "/api/v1/login/access-token", { body: { email: member.email, password: "long-enough-pw" } })).status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${member.id}`, { token: owner.token, body: { is_active: true } })).status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { token: member.token })).status).toBe(401);
      expect((await api("POST", "/api/v1/login/access-token", { body: { email: member.email, password: "long-enough-pw" } })).status).toBe(200);
    });
  });

  describe("malformed requests (finding 5)", () => {
    it("a body that claims gzip but is not answers 400; real gzip is read", async () => {
      const { token } = await signup(api, "gzip");
      const bad = await api("POST", "/api/v1/agents", { token, rawBody: "not gzip at all", headers: { "content-encoding": "gzip" } });
      expect(bad.status).toBe(400);
      expect(typeof bad.body.detail).toBe("string");
      const good = await fetch(`${cluster.baseUrl}/api/v1/agents`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(JSON.stringify({ name: "Zipped" })),
      });
      expect(good.status).toBe(201);
      const unknown = await api("POST", "/api/v1/agents", { token, rawBody: "{}", headers: { "content-encoding": "br2" } });
      expect(unknown.status).toBe(415);
    });

    it("an encoding outside gzip, deflate and br answers 415 naming those, whatever the runtime could decode (zstd)", async () => {
      const { token } = await signup(api, "zstd");
      const zstd = await fetch(`${cluster.baseUrl}/api/v1/agents`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-encoding": "zstd" },
        body: zstdCompressSync(JSON.stringify({ name: "Zstd" })),
      });
      expect(zstd.status).toBe(415);
      expect(zstd.headers.get("accept-encoding")).toBe("gzip, deflate, br");
      expect(((await zstd.json()) as { detail: string }).detail).toMatch(/Content-Encoding "zstd".*gzip, deflate or br/);
      for (const encoding of ["zstd", "compress", "gzip, zstd"]) {
        const res = await api("POST", "/api/v1/agents", { token, rawBody: "{}", headers: { "content-encoding": encoding } });
        expect(res.status).toBe(415);
      }
      expect((await api("POST", "/api/v1/agents", { token, rawBody: JSON.stringify({ name: "Plain" }), headers: { "content-encoding": "identity" } })).status).toBe(201);
      expect((await api("GET", "/api/v1/agents", { token })).body.data.map((a: { name: string }) => a.name)).toEqual(["Plain"]);
    });

    it("deeply nested bodies answer 4xx, never 500", async () => {
      const { token } = await signup(api, "deep");
      for (const depth of [1000, 5000, 100_000]) {
        const objects = "{\"a\":".repeat(depth) + "1" + "}".repeat(depth);
        const arrays = "[".repeat(depth) + "]".repeat(depth);
        for (const nested of [objects, arrays]) {
          const res = await api("POST", "/api/v1/agents", { token, rawBody: `{"name":"Deep","configuration":{"x":${nested}}}` });
          expect([400, 413, 422]).toContain(res.status);
          const put = await api("PUT", "/api/v1/users/me", { token, rawBody: `{"full_name":"x","extra":${nested}}` });
          expect([200, 400, 413, 422]).toContain(put.status);
        }
      }
    });

    it("a JSON body that is not an object answers 422", async () => {
      const { token } = await signup(api, "scalar");
      for (const rawBody of ["123", '"text"', "null", "true", "[]", '[{"full_name":"x"}]']) {
        const res = await api("PUT", "/api/v1/users/me", { token, rawBody });
        expect(res.status).toBe(422);
        expect(res.body.detail[0].loc).toEqual(["body"]);
      }
    });

    it("a known path with an unsupported method answers 405 with Allow", async () => {
      const { token } = await signup(api, "methods");
      // fetch refuses TRACE: send it with node:http.
      const trace = await new Promise<{ status?: number; allow?: string }>((resolve, reject) => {
        const req = request(`${cluster.baseUrl}/api/v1/agents`, { method: "TRACE", headers: { authorization: `Bearer ${token}` } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode, allow: res.headers.allow }));
        });
        req.on("error", reject);
        req.end();
      });
      expect(trace).toEqual({ status: 405, allow: "GET, POST" });
      const patch = await api("PATCH", "/api/v1/agents", { token, body: {} });
      expect(patch.status).toBe(405);
      expect(patch.body.detail).toBe("Method Not Allowed");
      const one = await api("POST", "/api/v1/users/me", { token });
      expect(one.status).toBe(405);
      expect(one.headers.get("allow")).toBe("GET, PUT, DELETE");
      expect((await api("GET", "/api/v1/nothing-here", { token })).status).toBe(404);
    });
  });

  describe("internal surface (finding 6)", () => {
    it("the gateway's alias listing is not served and not described", async () => {
      const { token } = await signup(api, "internal");
      expect((await api("GET", "/api/v1/gateway/list-aliases?withActionSchema=true", { token })).status).toBe(404);
      const doc = await api("GET", "/openapi.json");
      expect(Object.keys(doc.body.paths).filter((p) => p.includes("gateway"))).toEqual([]);
    });
  });

  // Last: the per-address limit, once reached, refuses every later credential check from this test's address.
  // Each failed attempt costs a password hash (~50 ms alone, far more on a busy machine): generous timeouts.
  describe("throttled guessing (finding 4)", () => {
    jest.setTimeout(120_000);

    it("wrong logins for one email end in 429 with Retry-After, even for the right password", async () => {
      const { email, password } = await signup(api, "guessed");
      const statuses = [];
      for (let i = 0; i < 11; i++) statuses.push((await api("POST", "/api/v1/login/access-token", { body: { email, password: `wrong-${i}` } })).status);
      expect(statuses).toEqual([...Array(10).fill(401), 429]);
      const right = await api("POST", "/api/v1/login/access-token", { body: { email, password } });
      expect(right.status).toBe(429);
      expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(right.body.detail).toMatch(/Too many/);
    });

    it("wrong team passwords end in 429 for anonymous callers", async () => {
      const { token } = await signup(api, "teamowner");
      const team = await api("POST", "/api/v1/teams", { token, body: { name: "Guarded", access_level: "PASSWORD_PROTECTED", access_password: "team-secret-1" } });
      expect(team.status).toBe(201);
      const read = (password: string) => api("GET", `/api/v1/teams/${team.body.id}`, { headers: { "x-access-password": password } });
      const statuses = [];
      for (let i = 0; i < 11; i++) statuses.push((await read(`wrong-${i}`)).status);
      expect(statuses).toEqual([...Array(10).fill(403), 429]);
      const right = await read("team-secret-1");
      expect(right.status).toBe(429);
      expect(right.headers.get("retry-after")).toBeTruthy();
    });

    it("a signup answers alike whether or not the email is registered, and the address keeps its login", async () => {
      const owner = await signup(api, "registered");
      const fresh = await api("POST", "/api/v1/users/", { body: { email: uniqueEmail("fresh"), password: "intruder-pass-1" } });
      const taken = await api("POST", "/api/v1/users/", { body: { email: owner.email.toUpperCase(), password: "intruder-pass-1" } });
      expect(taken.status).toBe(fresh.status);
      expect(Object.keys(taken.body)).toEqual(Object.keys(fresh.body));
      expect(taken.body).toMatchObject({ email: owner.email, role: "owner", token_type: "bearer" });
      expect(taken.body.account_id).not.toBe(owner.user.account_id);
      const me = await api("GET", "/api/v1/users/me", { token: taken.body.access_token });
      expect(me.body).toMatchObject({ id: taken.body.id, email: owner.email });
      // The address still logs in to its first user only; the other account's users never see each other.
      const login = (password: string) => api("POST", "/api/v1/login/access-token", { body: { email: owner.email, password } });
      expect((await login("intruder-pass-1")).status).toBe(401);
      const ownerLogin = await login(owner.password);
      expect(ownerLogin.status).toBe(200);
      const ownerUsers = await api("GET", "/api/v1/users/", { token: ownerLogin.body.access_token });
      expect(ownerUsers.body.map((u: { id: number }) => u.id)).toEqual([owner.user.id]);
      // Once that user sets an address of its own, it logs in with it.
      const own = uniqueEmail("own");
      expect((await api("PUT", "/api/v1/users/me", { token: taken.body.access_token, body: { email: own } })).status).toBe(200);
      expect((await api("POST", "/api/v1/login/access-token", { body: { email: own, password: "intruder-pass-1" } })).status).toBe(200);
    });

    it("a taken email stays 409 when an account adds a user", async () => {
      const owner = await signup(api, "adder");
      const other = await signup(api, "elsewhere");
      const res = await api("POST", "/api/v1/users/", { token: owner.token, body: { email: other.email, password: "long-enough-pw" } });
      expect(res.status).toBe(409);
    });

    it("one address guessing across many emails is stopped, and so are its signups", async () => {
      const taken = await signup(api, "taken");
      let status = 0;
      for (let i = 0; i < 60 && status !== 429; i++) {
        status = (await api("POST", "/api/v1/login/access-token", { body: { email: uniqueEmail("spray"), password: "guess-guess" } })).status;
      }
      expect(status).toBe(429);
      const probe = await api("POST", "/api/v1/users/", { body: { email: taken.email, password: "long-enough-pw" } });
      expect(probe.status).toBe(429);
      expect(probe.headers.get("retry-after")).toBeTruthy();
    });
  });
});
