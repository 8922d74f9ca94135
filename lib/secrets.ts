import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { loadConfig } from "./config";

const ALGORITHM = "aes-256-gcm";
const VERSION = "v1";

/**
 * The key that seals stored credentials: SECRETS_KEY, else derived from the JWT secret (JWT_SECRET, or the one
 * generated under DATA_DIR). Never a constant: a leaked source tree opens nothing.
 */
function key(): Buffer {
  const material = loadConfig().secretsKey;
  return createHash("sha256").update(`secrets:${material}`).digest();
}

/** Encrypts a credential (e.g. a wiki token) for storage: `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
export function sealSecret(plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv(ALGORITHM, key(), iv);
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
}

/** Decrypts what sealSecret produced; throws when it was tampered with or sealed under another key. */
export function openSecret(sealed: string): string {
  const [version, iv, tag, body] = sealed.split(".");
  if (version !== VERSION || !iv || !tag || !body) throw new Error("unrecognised sealed secret");
  const decipher = createDecipheriv(ALGORITHM, key(), Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
}
