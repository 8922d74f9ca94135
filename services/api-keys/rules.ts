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
