import type { Context } from "moleculer";

/** A user's standing in its account: owners and admins manage other users, members only themselves. */
export const USER_ROLES = ["owner", "admin", "member"] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** How the caller proved who they are. */
export type AuthType = "jwt" | "api_key" | "master";

/** What the gateway puts on ctx.meta for every request; services read the caller only from here. */
export interface RequestMeta {
  accountId?: number;
  userId?: number;
  apiKeyId?: number;
  authType?: AuthType;
  /** The calling user's role in its account (JWT callers), read with the token check. */
  role?: UserRole;
  /** What the calling API key may do beyond the account's records (e.g. "users:manage"). */
  permissions?: string[];
  /** The client's address (the socket's, or the trusted proxy's X-Forwarded-For entry): throttling keys on it. */
  clientIp?: string;
  /** Preferred locale from Accept-Language, e.g. "de-DE". */
  locale?: string;
  /** Selected request headers a service needs (e.g. x-access-password). */
  headers?: Record<string, string | undefined>;
  $statusCode?: number;
  $location?: string;
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

/** Context type for action handlers. */
export type Ctx<P = Record<string, unknown>> = Context<P, RequestMeta>;

/**
 * Who may call an action through the gateway: "required" (default: a user's token or an API key), "user" (a user's
 * token; the action refuses an API key, which acts for an account, not a user), "optional" or "none".
 */
export type AuthRequirement = "required" | "user" | "optional" | "none";

/**
 * Call options that act as an account: the one way code calls an action on an account's behalf without a
 * request (a scheduled run, the onboarding task of a new account, an MCP caller resolved from its token).
 * `identity` adds who acts (user, key, role) when known; the account is always the given one.
 */
export function asAccount(accountId: number, identity: Omit<RequestMeta, "accountId"> = {}): { meta: RequestMeta } {
  return { meta: { ...identity, accountId } };
}
