import { canonicalJson, keyClaim } from "../../../services/gateway/idempotency";

describe("Idempotency-Key claims", () => {
  const request = { method: "POST", path: "/api/v1/traits", query: {}, body: { name: "a", tags: ["x", "y"] } };
  const user = { accountId: 1, userId: 7, authType: "jwt" as const };

  it("reads bodies that differ only in key order as one request", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}');
    expect(keyClaim("k", user, request)).toEqual(keyClaim("k", user, { ...request, body: { tags: ["x", "y"], name: "a" } }));
  });

  it("scopes a key to the account and the credential, and fingerprints method, path, query and body", () => {
    const claim = keyClaim("k", user, request)!;
    expect(keyClaim("k", { ...user, userId: 8 }, request)!.id).not.toBe(claim.id);
    expect(keyClaim("k", { accountId: 1, apiKeyId: 7, authType: "api_key" }, request)!.id).not.toBe(claim.id);
    expect(keyClaim("k", { ...user, accountId: 2 }, request)!.id).not.toBe(claim.id);
    expect(keyClaim("k", user, { ...request, path: "/api/v1/tools" })!.fingerprint).not.toBe(claim.fingerprint);
    expect(keyClaim("k", user, { ...request, query: { auto_load: "false" } })!.fingerprint).not.toBe(claim.fingerprint);
  });

  it("ignores requests without a key or without credentials; refuses keys outside 1 to 255 characters", () => {
    expect(keyClaim(undefined, user, request)).toBeNull();
    expect(keyClaim("k", {}, request)).toBeNull();
    expect(() => keyClaim("", user, request)).toThrow(expect.objectContaining({ code: 422 }));
    expect(() => keyClaim("k".repeat(256), user, request)).toThrow(expect.objectContaining({ code: 422 }));
    expect(keyClaim("k".repeat(255), user, request)).not.toBeNull();
  });
});
