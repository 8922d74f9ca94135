import type { OutboxEntry } from "../../lib/outbox";
import type { RequestMeta, UserRole } from "../../lib/meta";
import type { ApiKeyPermission } from "../../lib/auth/api-keys";

/** Emitted once per created user; drives the verify-email automation. */
export const USER_REGISTERED = "user.registered";

/** Emails compare case-insensitively everywhere (signup, login, update). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The fields a UserUpdate may change, taken from validated params (never account or password hash). */
export function userChanges(params: { email?: string; full_name?: string | null; locale?: string | null } & ManagedChanges) {
  const changes: Record<string, unknown> = {};
  // The validator lets null through for optional fields; email, role and is_active cannot be null: not given.
  if (params.role != null) changes.role = params.role;
  if (params.is_active != null) changes.is_active = params.is_active;
  if (params.email != null) changes.email = normalizeEmail(params.email);
  if (params.full_name !== undefined) changes.full_name = params.full_name;
  if (params.locale !== undefined) changes.locale = params.locale;
  return changes;
}

/** The throttle counter of password guesses at an email's login. */
export function loginKey(email: string): string {
  return `login:${email}`;
}

/**
 * The throttle counter of guesses at a user's password: its login's, so guessing through a password change and
 * guessing at login share one budget (a user without a login address of its own has one by id).
 */
export function passwordKey(user: { _id: number; email?: string }): string {
  return user.email ? loginKey(user.email) : `user:${user._id}`;
}

/** The user.registered outbox entry, carrying the email-verification link. */
export function registrationEvent(
  user: { id: number; account_id: number; email: string; locale: string | null },
  verificationUrl: string,
  now = new Date(),
): OutboxEntry {
  return {
    event: USER_REGISTERED,
    payload: {
      user_id: user.id,
      account_id: user.account_id,
      email: user.email,
      locale: user.locale,
      verification_url: verificationUrl,
    },
    created_at: now,
  };
}

/** Link the verification email points at; the token is a short-lived JWT with purpose "verify-email". */
export function verificationLink(appUrl: string, token: string): string {
  return `${appUrl.replace(/\/+$/, "")}/api/v1/users/verify-email?token=${encodeURIComponent(token)}`;
}

/** The API-key permission that lets a key add and manage users (documented in docs/security.md). */
export const MANAGE_USERS_PERMISSION: ApiKeyPermission = "users:manage";

/** Who acts on a user record, as the gateway identified the caller. */
export type UserActor =
  | { kind: "user"; userId: number; role: UserRole }
  | { kind: "api_key"; apiKeyId: number; permissions: string[] }
  | { kind: "master" };

/** The actor of a request from its identity on ctx.meta; a JWT caller without a role is treated as a member. */
export function actorOf(meta: Pick<RequestMeta, "authType" | "userId" | "apiKeyId" | "role" | "permissions">): UserActor {
  if (meta.authType === "master") return { kind: "master" };
  if (meta.authType === "api_key") return { kind: "api_key", apiKeyId: meta.apiKeyId ?? 0, permissions: meta.permissions ?? [] };
  return { kind: "user", userId: meta.userId ?? 0, role: meta.role ?? "member" };
}

/** Owners, admins, the operator and keys holding users:manage may add users and change other users. */
export function managesUsers(actor: UserActor): boolean {
  if (actor.kind === "master") return true;
  if (actor.kind === "api_key") return actor.permissions.includes(MANAGE_USERS_PERMISSION);
  return actor.role === "owner" || actor.role === "admin";
}

/** Only owners (and the operator) create owners and admins or change anyone's role. */
function grantsRoles(actor: UserActor): boolean {
  return actor.kind === "master" || (actor.kind === "user" && actor.role === "owner");
}

/** Why `actor` may not add a user with `role` to its account, or null when it may. */
export function userCreateRefusal(actor: UserActor, role: UserRole): string | null {
  if (!managesUsers(actor)) {
    return actor.kind === "api_key"
      ? `This API key cannot add users: that needs the ${MANAGE_USERS_PERMISSION} permission`
      : "Only account owners and admins can add users";
  }
  if (role !== "member" && !grantsRoles(actor)) return "Only account owners can add owners and admins";
  return null;
}

/**
 * Why a user may not delete themselves, or null when they may: the last active owner of an account that has other
 * users would leave it with nobody to grant roles (nobody changes their own role, and only owners make owners). Alone
 * in the account, they close it.
 */
export function selfDeleteRefusal(role: UserRole, others: { users: number; activeOwners: number }): string | null {
  if (role !== "owner" || others.users === 0 || others.activeOwners > 0) return null;
  return "You are the account's last owner and other users remain: make another user an owner first";
}

/** The fields of a user update beyond the profile: account management, not self-service. */
export interface ManagedChanges {
  role?: UserRole;
  is_active?: boolean;
}

/**
 * Why `actor` may not apply `changes` to `target`, or null when it may. Everyone edits their own profile;
 * changing another user (profile, role, active flag) needs an owner or admin; a key with users:manage changes
 * members only; an owner is changed only by owners; nobody changes their own role or disables themselves (an
 * account never loses its last owner that way).
 */
export function userUpdateRefusal(actor: UserActor, target: { _id: number; role: UserRole }, changes: ManagedChanges): string | null {
  const self = actor.kind === "user" && actor.userId === target._id;
  if (self) return changes.role !== undefined || changes.is_active !== undefined ? "You cannot change your own role or active status" : null;
  if (!managesUsers(actor)) return "Only account owners and admins can change other users";
  if (actor.kind === "api_key" && target.role !== "member") return `A key with ${MANAGE_USERS_PERMISSION} manages members only, not admins or owners`;
  if (target.role === "owner" && !grantsRoles(actor)) return "Only account owners can change an owner";
  if (changes.role !== undefined && !grantsRoles(actor)) return "Only account owners can change roles";
  return null;
}
