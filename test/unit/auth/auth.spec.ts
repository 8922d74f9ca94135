import { createHmac } from "node:crypto";
import { cachedVerifier, signToken, verifyToken } from "../../../lib/auth/jwt";
import { hashPassword, verifyPassword } from "../../../lib/auth/passwords";
import { generateApiKey, hashApiKey, isMasterKey } from "../../../lib/auth/api-keys";
import { keyRejection, shouldTouch } from "../../../services/api-keys/rules";

const settings = { secret: "s".repeat(40), issuer: "iss", audience: "aud", ttlSeconds: 60 };
const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");

describe("JWT", () => {
  it("round-trips the user and account", async () => {
    const token = await signToken(settings, { userId: 3, accountId: 9 });
    expect(await verifyToken(settings, token)).toEqual({ userId: 3, accountId: 9, tokenVersion: 0 });
  });

  it("refuses another purpose, issuer, audience or secret", async () => {
    const token = await signToken(settings, { userId: 3, accountId: 9 }, "verify-email");
    expect(await verifyToken(settings, token)).toBeNull();
    expect(await verifyToken(settings, token, "verify-email")).toEqual({ userId: 3, accountId: 9, tokenVersion: 0 });
    const access = await signToken(settings, { userId: 3, accountId: 9 });
    expect(await verifyToken({ ...settings, issuer: "other" }, access)).toBeNull();
    expect(await verifyToken({ ...settings, audience: "other" }, access)).toBeNull();
    expect(await verifyToken({ ...settings, secret: "t".repeat(40) }, access)).toBeNull();
  });

  it("refuses alg=none and HS512 even with a valid HMAC", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "3", acc: 9, pur: "access", iss: "iss", aud: "aud", exp: now + 60 };
    const none = `${b64({ alg: "none" })}.${b64(claims)}.`;
    const head512 = `${b64({ alg: "HS512" })}.${b64(claims)}`;
    const hs512 = `${head512}.${createHmac("sha512", settings.secret).update(head512).digest("base64url")}`;
    expect(await verifyToken(settings, none)).toBeNull();
    expect(await verifyToken(settings, hs512)).toBeNull();
  });

  it("refuses expired tokens", async () => {
    const token = await signToken(settings, { userId: 1, accountId: 1 }, "access", -10);
    expect(await verifyToken(settings, token)).toBeNull();
  });
});

describe("passwords", () => {
  it("verifies the right password only, with a salted self-describing hash", async () => {
    const a = await hashPassword("correct horse");
    const b = await hashPassword("correct horse");
    expect(a).toMatch(/^scrypt\$\d+\$\d+\$\d+\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword("correct horse", a)).toBe(true);
    expect(await verifyPassword("wrong horse", a)).toBe(false);
    expect(await verifyPassword("x", "garbage")).toBe(false);
  });
});

describe("API keys", () => {
  it("generates prefixed random keys and stores only their hash", () => {
    const one = generateApiKey();
    const two = generateApiKey();
    expect(one.key).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
    expect(one.key).not.toBe(two.key);
    expect(one.hash).toBe(hashApiKey(one.key));
    expect(one.hash).not.toContain(one.key);
    expect(one.prefix).toBe(one.key.slice(0, 12));
  });

  it("recognises the master key only when one is configured", () => {
    expect(isMasterKey("m", "")).toBe(false);
    expect(isMasterKey("master-key", "master-key")).toBe(true);
    expect(isMasterKey("master-kez", "master-key")).toBe(false);
  });

  it("rejects inactive and expired keys, and touches last_used_at at most once a minute", () => {
    const now = new Date("2026-01-01T00:00:00Z");
    expect(keyRejection({ status: "active", expires_at: null }, now)).toBeNull();
    expect(keyRejection({ status: "inactive", expires_at: null }, now)).toMatch(/inactive/);
    expect(keyRejection({ status: "active", expires_at: new Date("2025-12-31T00:00:00Z") }, now)).toMatch(/expired/);
    expect(shouldTouch(null, now)).toBe(true);
    expect(shouldTouch(new Date(now.getTime() - 30_000), now)).toBe(false);
    expect(shouldTouch(new Date(now.getTime() - 61_000), now)).toBe(true);
  });
});

describe("cached verifier", () => {
  it("answers like verifyToken, remembering only valid tokens", async () => {
    const verify = cachedVerifier(settings);
    const token = await signToken(settings, { userId: 5, accountId: 6 });
    expect(await verify(token)).toEqual({ userId: 5, accountId: 6, tokenVersion: 0 });
    expect(await verify(token)).toEqual({ userId: 5, accountId: 6, tokenVersion: 0 });
    expect(await verify(token.slice(0, -2) + "xx")).toBeNull();
    const expired = await signToken(settings, { userId: 1, accountId: 1 }, "access", -10);
    expect(await verify(expired)).toBeNull();
  });
});
