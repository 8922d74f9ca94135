import { grantsKeyPermissions } from "../../lib/auth/api-keys";
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

/** Why the caller may not give a key `permissions`, or null (see grantsKeyPermissions). */
export function permissionGrantRefusal(meta: Pick<RequestMeta, "authType" | "role">, permissions: readonly string[] | undefined): string | null {
  if (!permissions?.length || grantsKeyPermissions(meta)) return null;
  return "Only account owners and admins can give API keys permissions";
}

/**
 * Why the caller may not change or delete `key`, or null. A key holding permissions is governed like granting
 * them (an owner disabled it: a member or a plain key must not enable it again); other keys are anyone's.
 */
export function privilegedKeyRefusal(meta: Pick<RequestMeta, "authType" | "role">, key: Pick<ApiKeyRecord, "permissions">): string | null {
  if (!key.permissions.length || grantsKeyPermissions(meta)) return null;
  return `Only account owners and admins can change or delete a key holding ${key.permissions.join(", ")}`;
}

/** Who is answerable for a new key: the user signed in, or, for a key made with a key, that key's person. */
export function keyCreator(meta: Pick<RequestMeta, "userId" | "apiKeyId">, creatingKey: Pick<ApiKeyRecord, "created_by_user_id"> | null) {
  return { created_by_user_id: meta.userId ?? creatingKey?.created_by_user_id ?? null, created_by_api_key_id: meta.apiKeyId ?? null };
}
