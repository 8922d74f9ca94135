import { createHmac } from "node:crypto";
import type { ServiceSchema } from "moleculer";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, uniqueEmail, type Api } from "../harness/http";
import { loadConfig } from "../../lib/config";
import { scaled } from "../harness/wait";

/** Builds a JWT by hand (independently of lib/auth/jwt) so tests can forge what an attacker would. */
function handmadeJwt(header: object, payload: object, secret?: string): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const head = `${b64(header)}.${b64(payload)}`;
  const sig = secret ? createHmac("sha256", secret).update(head).digest("base64url") : "";
  return `${head}.${sig}`;
}

const registered: Record<string, unknown>[] = [];
/** Stands in for the verify-email automation: a real service on its own node that hears user.registered. */
const listener: ServiceSchema = {
  name: "registration-listener",
  events: {
    "user.registered"(ctx: { params: { data: Record<string, unknown> } }) {
      registered.push(ctx.params.data);
    },
  },
};

async function eventually(check: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("foundation over NATS: gateway on one node, users and api-keys on another", () => {
  let cluster: Cluster;
  let api: Api;
  const jwt = loadConfig().jwt;

  beforeAll(async () => {
    cluster = await startCluster({ database: "foundation", extraServices: [listener] });
    api = apiClient(cluster.baseUrl);
  });
  afterAll(() => cluster?.stop());

  describe("health", () => {
    it("answers without credentials with status healthy, server, version and api_url", async () => {
      const res = await api("GET", "/health");
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: "healthy", server: expect.any(String), version: expect.any(String), api_url: expect.any(String) });
    });

    it("sets security headers on every response, errors included", async () => {
      for (const res of [await api("GET", "/health"), await api("GET", "/api/v1/users/me"), await api("GET", "/api/v1/nope")]) {
        expect(res.headers.get("x-content-type-options")).toBe("nosniff");
        expect(res.headers.get("x-frame-options")).toBe("DENY");
      }
    });
  });

  describe("signup and login", () => {
    it("creates an account and its first user, returns the user with a working JWT, stores the locale", async () => {
      const email = uniqueEmail("signup");
      const res = await api("POST", "/api/v1/users/", {
        body: { email: email.toUpperCase(), password: "long-enough-pw", full_name: "Ada" },
        headers: { "accept-language": "de-DE,de;q=0.9,en;q=0.5" },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: expect.any(Number), account_id: expect.any(Number), email, full_name: "Ada", locale: "de-DE", token_type: "bearer" });
      expect(res.body).not.toHaveProperty("password_hash");
      expect(res.body).not.toHaveProperty("password");
      const me = await api("GET", "/api/v1/users/me", { token: res.body.access_token });
      expect(me.status).toBe(200);
      expect(me.body.id).toBe(res.body.id);
    });

    it("emits user.registered with a verification link, and the link verifies the email", async () => {
      const { user, token } = await signup(api, "verify");
      await eventually(() => registered.some((e) => e.user_id === user.id));
      const event = registered.find((e) => e.user_id === user.id)!;
      expect(event).toMatchObject({ account_id: user.account_id, email: user.email, verification_url: expect.stringContaining("token=") });
      const link = new URL(event.verification_url as string);
      const verified = await api("GET", `${link.pathname}${link.search}`);
      expect(verified.status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { token })).body.email_verified).toBe(true);
    });

    it("emits nothing when the user is not saved (an account adding a taken email: 409)", async () => {
      const { email } = await signup(api, "dup");
      const owner = await signup(api, "dupowner");
      await eventually(() => registered.some((e) => e.email === email));
      const before = registered.filter((e) => e.email === email).length;
      const res = await api("POST", "/api/v1/users/", { token: owner.token, body: { email, password: "another-password" } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: expect.stringMatching(/already exists/) });
      await new Promise((r) => setTimeout(r, 300));
      expect(registered.filter((e) => e.email === email).length).toBe(before);
    });

    it("logs in with email and password and returns a bearer token", async () => {
      const { email, password } = await signup(api, "login");
      const res = await api("POST", "/api/v1/login/access-token", { body: { email, password } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ access_token: expect.any(String), token_type: "bearer", expires_in: expect.any(Number) });
      expect((await api("GET", "/api/v1/users/me", { token: res.body.access_token })).status).toBe(200);
      // RFC 9110 allows one or more spaces after the scheme, in any case.
      expect((await api("GET", "/api/v1/users/me", { headers: { authorization: `bearer  ${res.body.access_token}` } })).status).toBe(200);
      expect((await api("GET", "/api/v1/users/me", { headers: { authorization: `Bearer${res.body.access_token}` } })).status).toBe(401);
    });

    it("refuses a wrong password or unknown email with 401 and the same message", async () => {
      const { email } = await signup(api, "wrongpw");
      const wrong = await api("POST", "/api/v1/login/access-token", { body: { email, password: "not-the-password" } });
      const unknown = await api("POST", "/api/v1/login/access-token", { body: { email: uniqueEmail("ghost"), password: "whatever-pw" } });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(wrong.body).toEqual(unknown.body);
    });

    it("an authenticated signup adds the user to the caller's account", async () => {
      const owner = await signup(api, "inviter");
      const res = await api("POST", "/api/v1/users/", { token: owner.token, body: { email: uniqueEmail("invitee"), password: "long-enough-pw" } });
      expect(res.status).toBe(201);
      expect(res.body.account_id).toBe(owner.user.account_id);
      const list = await api("GET", "/api/v1/users/", { token: owner.token });
      expect(list.body.map((u: { id: number }) => u.id).sort()).toEqual([owner.user.id, res.body.id].sort());
    });
  });

  describe("JWT authentication", () => {
    it("401 without credentials, with a WWW-Authenticate header", async () => {
      const res = await api("GET", "/api/v1/users/me");
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: expect.any(String) });
      expect(res.headers.get("www-authenticate")).toMatch(/Bearer/);
    });

    it("401 for a token signed with another secret", async () => {
      const { user } = await signup(api, "forged");
      const now = Math.floor(Date.now() / 1000);
      const forged = handmadeJwt({ alg: "HS256", typ: "JWT" }, { sub: String(user.id), acc: user.account_id, pur: "access", iss: jwt.issuer, aud: jwt.audience, iat: now, exp: now + 600 }, "x".repeat(40));
      expect((await api("GET", "/api/v1/users/me", { token: forged })).status).toBe(401);
    });

    it("401 for an expired token signed with the right secret", async () => {
      const { user } = await signup(api, "expired");
      const now = Math.floor(Date.now() / 1000);
      const expired = handmadeJwt({ alg: "HS256", typ: "JWT" }, { sub: String(user.id), acc: user.account_id, pur: "access", iss: jwt.issuer, aud: jwt.audience, iat: now - 7200, exp: now - 3600 }, jwt.secret);
      expect((await api("GET", "/api/v1/users/me", { token: expired })).status).toBe(401);
    });

    it("401 for alg=none, a wrong audience, and a verification token used as an access token", async () => {
      const { user } = await signup(api, "algnone");
      const now = Math.floor(Date.now() / 1000);
      const claims = { sub: String(user.id), acc: user.account_id, pur: "access", iss: jwt.issuer, aud: jwt.audience, iat: now, exp: now + 600 };
      const none = handmadeJwt({ alg: "none", typ: "JWT" }, claims);
      const wrongAud = handmadeJwt({ alg: "HS256", typ: "JWT" }, { ...claims, aud: "someone-else" }, jwt.secret);
      const verifyPurpose = handmadeJwt({ alg: "HS256", typ: "JWT" }, { ...claims, pur: "verify-email" }, jwt.secret);
      for (const token of [none, wrongAud, verifyPurpose, "not-a-jwt"]) {
        expect((await api("GET", "/api/v1/users/me", { token })).status).toBe(401);
      }
    });

    it("a bad token is refused even where anonymous callers are allowed", async () => {
      const res = await api("POST", "/api/v1/users/", { token: "garbage", body: { email: uniqueEmail(), password: "long-enough-pw" } });
      expect(res.status).toBe(401);
    });
  });

  describe("account API keys", () => {
    it("creates a key shown once, authenticates with X-AUTH-TOKEN, never shows it again", async () => {
      const { token } = await signup(api, "keys");
      const created = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "ci" } });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ id: expect.any(Number), name: "ci", status: "active", key: expect.stringMatching(/^apk_/) });
      expect(created.body).not.toHaveProperty("key_hash");
      const key = created.body.key;
      const viaKey = await api("GET", "/api/v1/users/", { apiKey: key });
      expect(viaKey.status).toBe(200);
      const fetched = await api("GET", `/api/v1/account-api-keys/${created.body.id}`, { apiKey: key });
      expect(fetched.status).toBe(200);
      expect(fetched.body).not.toHaveProperty("key");
      expect(fetched.body.prefix).toBe(key.slice(0, 12));
      const list = await api("GET", "/api/v1/account-api-keys", { token });
      expect(list.body).toHaveLength(1);
      expect(list.body[0]).not.toHaveProperty("key");
    });

    it("a key set inactive stops working at once, and works again when reactivated", async () => {
      const { token } = await signup(api, "disable");
      const { body } = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "temp" } });
      expect((await api("GET", "/api/v1/users/", { apiKey: body.key })).status).toBe(200);
      const updated = await api("PUT", `/api/v1/account-api-keys/${body.id}`, { token, body: { status: "inactive" } });
      expect(updated.status).toBe(200);
      expect(updated.body.status).toBe("inactive");
      expect((await api("GET", "/api/v1/users/", { apiKey: body.key })).status).toBe(401);
      await api("PUT", `/api/v1/account-api-keys/${body.id}`, { token, body: { status: "active" } });
      expect((await api("GET", "/api/v1/users/", { apiKey: body.key })).status).toBe(200);
    });

    it("a deleted key stops working; an unknown key is 401", async () => {
      const { token } = await signup(api, "delkey");
      const { body } = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "gone" } });
      expect((await api("DELETE", `/api/v1/account-api-keys/${body.id}`, { token })).status).toBe(204);
      expect((await api("GET", "/api/v1/users/", { apiKey: body.key })).status).toBe(401);
      expect((await api("GET", `/api/v1/account-api-keys/${body.id}`, { token })).status).toBe(404);
      expect((await api("GET", "/api/v1/users/", { apiKey: "apk_unknown" })).status).toBe(401);
    });

    it("expires_at takes ISO 8601 text (no offset is UTC) and refuses other notations (ADR 0066)", async () => {
      const { token } = await signup(api, "expiry");
      const create = (expires_at: unknown) => api("POST", "/api/v1/account-api-keys", { token, body: { name: "dated", expires_at } });
      for (const [sent, stored] of [["2099-01-01", "2099-01-01T00:00:00.000Z"], ["2099-01-01T10:30:00", "2099-01-01T10:30:00.000Z"], ["2099-01-01T10:30:00+02:00", "2099-01-01T08:30:00.000Z"]]) {
        const res = await create(sent);
        expect([sent, res.status, res.body.expires_at]).toEqual([sent, 201, stored]);
      }
      // Date's parser read these as a millisecond after 1970, 7 March 2001 and 2 March 2099.
      for (const sent of ["1", 1, "March 7", "2099-02-30", true]) {
        const res = await create(sent);
        expect([sent, res.status]).toEqual([sent, 422]);
        expect(res.body.detail[0]).toMatchObject({ loc: ["body", "expires_at"], type: "date" });
      }
    });

    it("only name and status are updatable; other fields are ignored, bad status is 422", async () => {
      const { token } = await signup(api, "upd");
      const { body } = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "a" } });
      const res = await api("PUT", `/api/v1/account-api-keys/${body.id}`, { token, body: { name: "b", prefix: "hacked", account_id: 999 } });
      expect(res.body).toMatchObject({ name: "b", prefix: body.prefix, account_id: body.account_id });
      const bad = await api("PUT", `/api/v1/account-api-keys/${body.id}`, { token, body: { status: "paused" } });
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0]).toMatchObject({ loc: ["body", "status"], type: "enumValue" });
    });
  });

  describe("account isolation", () => {
    it("another account's user and API key answer 403; missing ones 404", async () => {
      const a = await signup(api, "tenant-a");
      const b = await signup(api, "tenant-b");
      const keyOfB = (await api("POST", "/api/v1/account-api-keys", { token: b.token, body: { name: "b" } })).body;
      expect((await api("GET", `/api/v1/users/${b.user.id}`, { token: a.token })).status).toBe(403);
      expect((await api("PUT", `/api/v1/users/${b.user.id}`, { token: a.token, body: { full_name: "pwned" } })).status).toBe(403);
      expect((await api("GET", `/api/v1/account-api-keys/${keyOfB.id}`, { token: a.token })).status).toBe(403);
      expect((await api("DELETE", `/api/v1/account-api-keys/${keyOfB.id}`, { token: a.token })).status).toBe(403);
      expect((await api("GET", "/api/v1/account-api-keys/999999", { token: a.token })).status).toBe(404);
      expect((await api("GET", "/api/v1/users/999999", { token: a.token })).status).toBe(404);
      const list = await api("GET", "/api/v1/users/", { token: a.token });
      expect(list.body.map((u: { id: number }) => u.id)).toEqual([a.user.id]);
      expect((await api("GET", "/api/v1/account-api-keys", { token: a.token })).body).toEqual([]);
    });

    it("same-account users may read and update each other; deleting is self-only", async () => {
      const owner = await signup(api, "self");
      const other = await api("POST", "/api/v1/users/", { token: owner.token, body: { email: uniqueEmail("mate"), password: "long-enough-pw" } });
      expect((await api("GET", `/api/v1/users/${other.body.id}`, { token: owner.token })).status).toBe(200);
      const upd = await api("PUT", `/api/v1/users/${other.body.id}`, { token: owner.token, body: { full_name: "Renamed" } });
      expect(upd.body.full_name).toBe("Renamed");
      expect((await api("DELETE", `/api/v1/users/${other.body.id}`, { token: owner.token })).status).toBe(403);
      expect((await api("DELETE", `/api/v1/users/${other.body.id}`, { token: other.body.access_token })).status).toBe(204);
      expect((await api("GET", `/api/v1/users/${other.body.id}`, { token: owner.token })).status).toBe(404);
    });

    it("the last owner cannot leave an account other users remain in (409); another owner first, or alone", async () => {
      const owner = await signup(api, "last-owner");
      const mate = await api("POST", "/api/v1/users/", { token: owner.token, body: { email: uniqueEmail("mate"), password: "long-enough-pw" } });
      const refused = await api("DELETE", `/api/v1/users/${owner.user.id}`, { token: owner.token });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(/last owner/);
      expect((await api("GET", "/api/v1/users/me", { token: owner.token })).status).toBe(200);
      expect((await api("PUT", `/api/v1/users/${mate.body.id}`, { token: owner.token, body: { role: "owner" } })).status).toBe(200);
      expect((await api("DELETE", `/api/v1/users/${owner.user.id}`, { token: owner.token })).status).toBe(204);
      // The new owner, alone now, may close the account.
      expect((await api("DELETE", `/api/v1/users/${mate.body.id}`, { token: mate.body.access_token })).status).toBe(204);
    });
  });

  describe("error mapping", () => {
    it("422 HTTPValidationError for body problems, one item per problem", async () => {
      const res = await api("POST", "/api/v1/users/", { body: { email: "not-an-email", password: "short" } });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(
        expect.arrayContaining([
          { loc: ["body", "email"], msg: expect.any(String), type: "email" },
          { loc: ["body", "password"], msg: expect.any(String), type: "stringMin" },
        ]),
      );
    });

    it("422 for a missing required field, located in the body", async () => {
      const res = await api("POST", "/api/v1/login/access-token", { body: { email: uniqueEmail() } });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([{ loc: ["body", "password"], msg: expect.any(String), type: "required" }]);
    });

    it("422 for query problems: limit and skip bounds, non-numbers", async () => {
      const { token } = await signup(api, "query");
      for (const [qs, field, type] of [
        ["limit=0", "limit", "numberMin"],
        ["limit=1001", "limit", "numberMax"],
        ["skip=-1", "skip", "numberMin"],
        ["limit=abc", "limit", "number"],
        // Decimal notation only (ADR 0066): Number() would read these as 16, 5, 0 and 5.
        ["limit=0x10", "limit", "number"],
        ["limit=%205", "limit", "number"],
        ["skip=", "skip", "number"],
        ["limit[]=5", "limit", "number"],
      ] as const) {
        const res = await api("GET", `/api/v1/users/?${qs}`, { token });
        expect(res.status).toBe(422);
        expect(res.body.detail).toEqual([{ loc: ["query", field], msg: expect.any(String), type }]);
      }
      expect((await api("GET", "/api/v1/users/?limit=1000&skip=0", { token })).status).toBe(200);
    });

    it("422 for a bad path parameter", async () => {
      const { token } = await signup(api, "path");
      for (const id of ["abc", "0x1", "%201", "1%20"]) {
        const res = await api("GET", `/api/v1/users/${id}`, { token });
        expect([id, res.status]).toEqual([id, 422]);
        expect(res.body.detail[0].loc).toEqual(["path", "user_id"]);
      }
    });

    it("400 for malformed JSON, 413 for an oversized body, never 500", async () => {
      const bad = await api("POST", "/api/v1/login/access-token", { rawBody: '{"email": ' });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ detail: "Malformed JSON in request body" });
      const huge = await api("POST", "/api/v1/login/access-token", { rawBody: JSON.stringify({ email: "a@b.co", password: "x".repeat(2 * 1024 * 1024) }) });
      expect(huge.status).toBe(413);
      const notUtf8 = await api("POST", "/api/v1/login/access-token", { rawBody: Buffer.from('{"email": "\xff\xfe"}', "latin1") });
      expect(notUtf8.status).toBe(400);
      expect(notUtf8.body).toEqual({ detail: "Request body is not valid UTF-8" });
    });

    it("415 for a body that is not JSON; a +json type is read, an empty POST may name any type", async () => {
      const login = { email: "nobody@example.com", password: "whatever-password" };
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
        const res = await api("POST", "/api/v1/login/access-token", { rawBody: JSON.stringify(login), headers: { "content-type": type } });
        expect(res.status).toBe(415);
        expect(res.body).toEqual({ detail: "Request body must be JSON (Content-Type: application/json)" });
      }
      const { token } = await signup(api, "media");
      const suffixed = await api("POST", "/api/v1/agents", { token, rawBody: '{"name":"Suffixed"}', headers: { "content-type": "application/vnd.api+json; charset=utf-8" } });
      expect(suffixed.status).toBe(201);
      const empty = await api("POST", `/api/v1/agents/${suffixed.body.id}/tools/knowledge-retrieval`, { token, rawBody: "", headers: { "content-type": "text/plain" } });
      expect(empty.status).toBeLessThan(300);
    });

    it("404 with a detail body for unknown paths", async () => {
      const res = await api("GET", "/api/v1/does-not-exist");
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: "Not Found" });
    });

    it("403 for API-key callers on user-only endpoints", async () => {
      const { token } = await signup(api, "keyme");
      const { body } = await api("POST", "/api/v1/account-api-keys", { token, body: { name: "k" } });
      expect((await api("GET", "/api/v1/users/me", { apiKey: body.key })).status).toBe(403);
      expect((await api("PUT", "/api/v1/users/me/password", { apiKey: body.key, body: { current_password: "x", new_password: "another-long-pass" } })).status).toBe(403);
      // Without credentials these are the 401 of any protected route.
      expect((await api("GET", "/api/v1/users/me")).status).toBe(401);
    });
  });

  describe("pagination", () => {
    it("honours skip and limit on bare-array lists", async () => {
      const { token } = await signup(api, "pages");
      for (let i = 0; i < 3; i++) await api("POST", "/api/v1/account-api-keys", { token, body: { name: `k${i}` } });
      const page = await api("GET", "/api/v1/account-api-keys?skip=1&limit=1", { token });
      expect(page.status).toBe(200);
      expect(page.body.map((k: { name: string }) => k.name)).toEqual(["k1"]);
    });
  });
});
