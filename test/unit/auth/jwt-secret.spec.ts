import { createCipheriv, createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SignJWT } from "jose";
import { loadConfig } from "../../../lib/config";
import type { Env } from "../../../lib/env";
import { verifyToken } from "../../../lib/auth/jwt";
import { secretBox } from "../../../lib/secrets";

/** The constant lib/config.ts used to fall back on (finding 2): nothing may accept it any more. */
const OLD_CONSTANT = "dev-only-insecure-jwt-secret-change-me";

describe("JWT secret without JWT_SECRET (finding 2)", () => {
  let dataDir: string;
  /** A process environment without JWT_SECRET, SECRETS_KEY or TRANSPORTER, its data in a fresh directory. */
  const config = (env: Env = {}) => loadConfig({ DATA_DIR: dataDir, ...env });

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "jwt-secret-"));
  });
  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("generates a random secret on first start, kept with the data (mode 0600) and reused", () => {
    const first = config().jwt;
    expect(first.generatedSecret).toBe(true);
    expect(first.secret).not.toBe(OLD_CONSTANT);
    expect(first.secret.length).toBeGreaterThanOrEqual(64);
    const file = path.join(dataDir, "secrets", "jwt-secret");
    expect(fs.readFileSync(file, "utf8")).toBe(first.secret);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(config().jwt.secret).toBe(first.secret);
  });

  it("refuses tokens signed with the old constant", async () => {
    const jwt = config().jwt;
    const forged = await new SignJWT({ acc: 1, pur: "access", ver: 0 })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("1")
      .setIssuer(jwt.issuer)
      .setAudience(jwt.audience)
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(OLD_CONSTANT));
    expect(await verifyToken(jwt, forged)).toBeNull();
  });

  it("seals stored credentials with a key derived from the generated secret, not from the constant", () => {
    const box = secretBox(config().secretsKey);
    const sealed = box.seal("wiki-token");
    expect(box.open(sealed)).toBe("wiki-token");
    const constantKey = createHash("sha256").update(`secrets:${OLD_CONSTANT}`).digest();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", constantKey, iv);
    const body = Buffer.concat([cipher.update("x", "utf8"), cipher.final()]);
    const underConstant = ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")].join(".");
    expect(() => box.open(underConstant)).toThrow();
  });

  it("requires JWT_SECRET in production and in a cluster, and refuses a short one", () => {
    expect(() => config({ NODE_ENV: "production" })).toThrow(/JWT_SECRET/);
    expect(() => config({ TRANSPORTER: "nats://127.0.0.1:4222" })).toThrow(/JWT_SECRET/);
    expect(() => config({ TRANSPORTER: "nats://127.0.0.1:4222", JWT_SECRET: "short" })).toThrow(/at least 32/);
    expect(fs.existsSync(path.join(dataDir, "secrets"))).toBe(false);
  });
});
