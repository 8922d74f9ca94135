import { createHash } from "node:crypto";
import type { FieldProblem } from "../../lib/errors";
import { httpUrlProblem } from "../../lib/http-url";

/** Event kinds a subscription can receive (the catalogue lives with the event log). */
export { WEBHOOK_EVENT_TYPES } from "../../lib/event-types";
import type { WEBHOOK_EVENT_TYPES } from "../../lib/event-types";
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Longest destination URL accepted (the common browser and proxy limit). */
export const MAX_URL_LENGTH = 2048;
/** Each retry waits its scheduled delay plus or minus this share, so failing receivers are not hit in lockstep. */
export const RETRY_JITTER = 0.2;

/** A destination must be an absolute http(s) URL naming a host; whether its address may be reached is checked at delivery. */
export function urlProblem(url: string): FieldProblem | null {
  return httpUrlProblem(url, "url");
}

/** Whether a subscription takes an event: it is enabled, and selects all types (none listed) or this one. */
export function receives(subscription: { enabled: boolean; event_types: string[] }, type: string): boolean {
  return subscription.enabled && (subscription.event_types.length === 0 || subscription.event_types.includes(type));
}

/**
 * A delivery's webhook-id: "msg_" and 24 URL-safe characters (never a ".", which delimits the signed content),
 * derived from the event and the subscription, so a redelivered event maps onto the same delivery.
 */
export function messageIdFor(eventId: string, subscriptionId: number): string {
  return `msg_${createHash("sha256").update(`${eventId}\n${subscriptionId}`).digest("base64url").slice(0, 24)}`;
}

/** The body every attempt of a delivery sends, byte for byte: Standard Webhooks' {type, timestamp, data}. */
export function deliveryBody(type: string, data: unknown, occurredAt: Date): string {
  return JSON.stringify({ type, timestamp: occurredAt.toISOString(), data: data ?? {} });
}

/** What an attempt's answer means: 2xx delivered, 410 Gone stops for good, anything else is retried. */
export function attemptOutcome(status: number | undefined): "delivered" | "gone" | "retry" {
  if (status !== undefined && status >= 200 && status <= 299) return "delivered";
  if (status === 410) return "gone";
  return "retry";
}

/**
 * Milliseconds until the next attempt after `attemptsMade` failed ones, or null when the schedule is used up.
 * The scheduled delay gets ±RETRY_JITTER; a receiver's Retry-After is honoured up to the schedule's longest delay.
 */
export function retryDelayMs(schedule: number[], attemptsMade: number, random: number, retryAfterMs?: number): number | null {
  const scheduled = schedule[attemptsMade - 1];
  if (scheduled === undefined) return null;
  const jittered = Math.round(scheduled * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
  if (retryAfterMs === undefined) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, Math.max(...schedule)));
}

/** How an attempt ended, as the delivery records it. */
export type AttemptResult =
  | { status: "delivered"; httpStatus: number }
  | { status: "pending"; nextAttemptAt: Date; httpStatus: number | null; error: string }
  | { status: "failed"; httpStatus: number | null; error: string };

/** What the receiver did: answered with a status (and maybe Retry-After), or never answered (error). */
export interface Answer {
  status?: number;
  retryAfterMs?: number;
  error?: string;
}

/** The delivery's next state after its `attemptsMade`-th attempt got `answer`. */
export function attemptResult(answer: Answer, attemptsMade: number, schedule: number[], now: Date, random = Math.random()): AttemptResult {
  const httpStatus = answer.status ?? null;
  switch (attemptOutcome(answer.status)) {
    case "delivered":
      return { status: "delivered", httpStatus: answer.status! };
    case "gone":
      return { status: "failed", httpStatus, error: "HTTP 410 Gone: the endpoint asked to stop; the subscription was disabled" };
    case "retry": {
      const error = answer.error ?? `HTTP ${answer.status}`;
      const delay = retryDelayMs(schedule, attemptsMade, random, answer.retryAfterMs);
      if (delay === null) return { status: "failed", httpStatus, error: `${error}; gave up after ${attemptsMade} attempts` };
      return { status: "pending", nextAttemptAt: new Date(now.getTime() + delay), httpStatus, error };
    }
  }
}

/** The secrets a delivery is signed with now: the current one, and each earlier one while its overlap lasts. */
export function signingSecrets(current: string, previous: { secret: string; expiresAt: Date }[], now: Date): string[] {
  return [current, ...previous.filter((p) => p.expiresAt > now).map((p) => p.secret)];
}

/** Earlier rotations' secrets kept signing beside the previous one; a rotation beyond them ends the oldest's overlap early. */
export const MAX_OLDER_SECRETS = 4;

/**
 * The secrets of earlier rotations a rotation at `now` keeps: the one it replaces as previous while its overlap
 * lasts, then the older ones still in theirs, newest first, at most MAX_OLDER_SECRETS. A second rotation within the
 * first's overlap dropped the first previous secret at once, a day before the expiry the API had announced.
 */
export function olderSecrets<S extends { expires_at: string }>(previous: S | null, older: S[], now: Date): S[] {
  return [...(previous ? [previous] : []), ...older].filter((s) => Date.parse(s.expires_at) > now.getTime()).slice(0, MAX_OLDER_SECRETS);
}

/**
 * How many more deliveries a replica may take claimed, with `running` attempts and `waiting` claimed deliveries
 * queued for a slot: two per slot of `concurrency`, one attempted and one waiting for it. A waiting delivery then
 * starts within about one attempt's time, inside its lease; deliveries written claimed need no claim of their
 * own, which is the store's dearest command per delivery (docs/adr/0050-write-path-speed.md).
 */
export function claimRoom(concurrency: number, running: number, waiting: number): number {
  return Math.max(0, 2 * concurrency - running - waiting);
}

/** Whether a claimed delivery may still start an attempt at `now`: its lease must outlast a whole attempt. */
export function leaseOutlastsAttempt(leaseExpiresAt: Date | null, timeoutMs: number, now: Date): boolean {
  return leaseExpiresAt !== null && leaseExpiresAt.getTime() - now.getTime() > timeoutMs;
}
