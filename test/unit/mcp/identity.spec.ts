import { Errors } from "moleculer";
import { ACCEPTED_CREDENTIALS, identityResolver, type ActionCaller } from "../../../lib/auth/identity";
import { signToken } from "../../../lib/auth/jwt";

const jwt = { secret: "unit-test-secret-0123456789abcdef0123", issuer: "test", audience: "test-api", ttlSeconds: 60 };
const masterApiKey = "master-key-0123456789";
const resolve = identityResolver({ jwt, masterApiKey });

/** Stands in for the users and api-keys services: user 2 of account 3 at token version 1, and one key. */
const apiKeys: ActionCaller & { calls: unknown[] } = {
  calls: [],
  async call<T, P>(action: string, params: P): Promise<T> {
    this.calls.push({ action, params });
    if (action === "users.session") {
      return ((params as { user_id: number }).user_id === 2 ? { account_id: 3, role: "admin", token_version: 1, is_active: true } : null) as T;
    }
    if ((params as { key: string }).key === "apk_known") return { accountId: 4, apiKeyId: 11 } as T;
    throw new Errors.MoleculerClientError("Invalid API key", 401, "UNAUTHORIZED");
  },
};

const rejection = (promise: Promise<unknown>) => promise.then(() => null, (err: Errors.MoleculerError) => ({ code: err.code, message: err.message }));

describe("identityResolver (shared by the gateway and the MCP server)", () => {
  it("answers null when the request carries no credentials", async () => {
    expect(await resolve({}, apiKeys)).toBeNull();
    expect(await resolve({ "x-auth-token": "" }, apiKeys)).toBeNull();
  });

  it("resolves a Bearer JWT whose user still exists at the token's version, with the user's role", async () => {
    const token = await signToken(jwt, { userId: 2, accountId: 3, tokenVersion: 1 });
    apiKeys.calls = [];
    expect(await resolve({ authorization: `Bearer ${token}` }, apiKeys)).toEqual({ accountId: 3, userId: 2, authType: "jwt", role: "admin" });
    expect(apiKeys.calls).toEqual([{ action: "users.session", params: { user_id: 2 } }]);
  });

  it("refuses a token of an older version, another account or a deleted user", async () => {
    for (const claims of [{ userId: 2, accountId: 3 }, { userId: 2, accountId: 4, tokenVersion: 1 }, { userId: 9, accountId: 3 }]) {
      const token = await signToken(jwt, claims);
      expect(await rejection(resolve({ authorization: `Bearer ${token}` }, apiKeys))).toEqual({ code: 401, message: `Invalid or expired token; ${ACCEPTED_CREDENTIALS}` });
    }
  });

  it("refuses a malformed header or an invalid token with 401", async () => {
    expect(await rejection(resolve({ authorization: "Basic abc" }, apiKeys))).toEqual({ code: 401, message: `Invalid authorization header; ${ACCEPTED_CREDENTIALS}` });
    expect(await rejection(resolve({ authorization: "Bearer not-a-jwt" }, apiKeys))).toEqual({ code: 401, message: `Invalid or expired token; ${ACCEPTED_CREDENTIALS}` });
  });

  it("checks an X-AUTH-TOKEN with the api-keys service and passes its refusal on", async () => {
    expect(await resolve({ "x-auth-token": "apk_known" }, apiKeys)).toEqual({ accountId: 4, apiKeyId: 11, authType: "api_key" });
    expect(await rejection(resolve({ "x-auth-token": "apk_unknown" }, apiKeys))).toEqual({ code: 401, message: `Invalid API key; ${ACCEPTED_CREDENTIALS}` });
  });

  it("takes an account key sent as a Bearer token (issue 23)", async () => {
    expect(await resolve({ authorization: "Bearer apk_known" }, apiKeys)).toEqual({ accountId: 4, apiKeyId: 11, authType: "api_key" });
    expect(await rejection(resolve({ authorization: "Bearer apk_unknown" }, apiKeys))).toEqual({ code: 401, message: `Invalid API key; ${ACCEPTED_CREDENTIALS}` });
  });

  it("lets the master key act for the account in X-Account-Id, and only with one", async () => {
    expect(await resolve({ "x-auth-token": masterApiKey, "x-account-id": "8" }, apiKeys)).toEqual({ accountId: 8, authType: "master" });
    expect(await rejection(resolve({ "x-auth-token": masterApiKey }, apiKeys))).toMatchObject({ code: 400 });
  });
});
