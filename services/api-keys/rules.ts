import type { RequestMeta } from "../../lib/meta";
import type { ApiKeyRecord } from "./model";

/** last_used_at is refreshed at most this often, so authentication is not a write per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Why a stored key cannot authenticate right now, or null when it can. */
export function keyRejection(key: Pick<ApiKeyRecord, "status" | "expires_at">, now = new Date()): string | null {
  if (key.status !== "active") return "API key is inactive";
  if (key.expires_at && key.expires_at <= now) return "API key has expired";
  return null;
}

/** Whether this use should be recorded in last_used_at. */
export function shouldTouch(lastUsedAt: Date | null, now = new Date()): boolean {
  return !lastUsedAt || now.getTime() - lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
}

/**
 * Why the caller may not give a key `permissions`, or null. Only an account owner or admin signed in as
 * themselves (or the operator) grants permissions: a key never widens its own or another key's rights.
 */
export function permissionGrantRefusal(meta: Pick<RequestMeta, "authType" | "role">, permissions: readonly string[] | undefined): string | null {
  if (!permissions?.length) return null;
  if (meta.authType === "master") return null;
  if (meta.authType === "jwt" && (meta.role === "owner" || meta.role === "admin")) return null;
  return "Only account owners and admins can give API keys permissions";
}
