import type { OutboxEntry } from "../../lib/outbox";

/** Emitted once per created user; drives the verify-email automation. */
export const USER_REGISTERED = "user.registered";

/** Emails compare case-insensitively everywhere (signup, login, update). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The fields a UserUpdate may change, taken from validated params (never account or password hash). */
export function userChanges(params: { email?: string; full_name?: string | null; locale?: string | null }) {
  const changes: Record<string, unknown> = {};
  if (params.email !== undefined) changes.email = normalizeEmail(params.email);
  if (params.full_name !== undefined) changes.full_name = params.full_name;
  if (params.locale !== undefined) changes.locale = params.locale;
  return changes;
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
