import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Account keys are recognisable in logs and secret scanners by this prefix. */
export const API_KEY_PREFIX = "apk_";
/**
 * Permissions a key may carry beyond reading and writing its account's records. users:manage lets the key add
 * users (each with their own login) and manage them as an admin would; nothing else grants that to a key.
 */
export const API_KEY_PERMISSIONS = ["users:manage"] as const;
export type ApiKeyPermission = (typeof API_KEY_PERMISSIONS)[number];

/**
 * Who may give keys permissions, and so change, delete or revoke keys that hold them: an account owner or admin
 * signed in as themselves, or the operator. Never a key, so no key widens its own or another key's rights.
 */
export function grantsKeyPermissions(meta: { authType?: string; role?: string }): boolean {
  return meta.authType === "master" || (meta.authType === "jwt" && (meta.role === "owner" || meta.role === "admin"));
}

/** Why the caller may not revoke a person's keys (some may hold permissions), or null when it may. */
export function keyRevocationRefusal(meta: { authType?: string; role?: string }): string | null {
  return grantsKeyPermissions(meta) ? null : "Only account owners and admins can revoke a person's API keys";
}

/** How much of the key is kept in clear so users can tell keys apart. */
const VISIBLE_CHARS = 12;

/** A new random key (256 bits) and what is stored of it: its SHA-256 and a short visible prefix. */
export function generateApiKey(): { key: string; hash: string; prefix: string } {
  const key = API_KEY_PREFIX + randomBytes(32).toString("base64url");
  return { key, hash: hashApiKey(key), prefix: key.slice(0, VISIBLE_CHARS) };
}

/** Keys are high-entropy, so a fast unsalted hash is safe and lets the lookup use an index. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Constant-time comparison for the operator's master key. */
export function isMasterKey(candidate: string, masterKey: string): boolean {
  if (!masterKey) return false;
  const a = createHash("sha256").update(candidate).digest();
  const b = createHash("sha256").update(masterKey).digest();
  return timingSafeEqual(a, b);
}
