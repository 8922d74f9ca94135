import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const ALGORITHM = "aes-256-gcm";
const VERSION = "v1";

/** Seals stored credentials (wiki tokens, webhook signing secrets) and opens them again. */
export interface SecretBox {
  /** Encrypts a credential for storage: `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
  seal(plain: string): string;
  /** Decrypts what seal produced; throws when it was tampered with or sealed under another key. */
  open(sealed: string): string;
}

/**
 * The box for the configuration's `secretsKey` (SECRETS_KEY, else the JWT secret, configured or generated under
 * DATA_DIR; never a constant, so a leaked source tree opens nothing). The key is derived once, when a service
 * starts, not per credential.
 */
export function secretBox(material: string): SecretBox {
  const key = createHash("sha256").update(`secrets:${material}`).digest();
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv(ALGORITHM, key, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split(".");
      if (version !== VERSION || !iv || !tag || !body) throw new Error("unrecognised sealed secret");
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}
