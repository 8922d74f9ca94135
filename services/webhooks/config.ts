import { numberEnv } from "../../lib/env";
import { parseRetrySchedule } from "./rules";

/** Standard Webhooks' example schedule: retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure. */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h";

/** Dispatcher settings, read when the service starts (tests set the environment before starting a cluster). */
export function loadWebhookConfig() {
  const timeoutMs = numberEnv("WEBHOOK_TIMEOUT_MS", 15_000, { min: 1 });
  return {
    /** How often an idle dispatcher looks for due deliveries. */
    pollMs: numberEnv("WEBHOOK_POLL_MS", 1000, { min: 1 }),
    /** Delays before each retry; a delivery gets 1 + schedule.length attempts. */
    retryScheduleMs: parseRetrySchedule(process.env.WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE),
    /** Time a receiver has to answer (Standard Webhooks recommends 15 to 30 s). */
    timeoutMs,
    /** A claim outlives the request it covers, so a live dispatcher's attempt is never taken over mid-flight. */
    leaseMs: Math.max(numberEnv("WEBHOOK_LEASE_MS", 60_000, { min: 1 }), timeoutMs + 5000),
    /** Deliveries one dispatcher sends at the same time. */
    concurrency: Math.floor(numberEnv("WEBHOOK_CONCURRENCY", 10, { min: 1 })),
    /** How long the previous secret keeps signing after a rotation (a second signature in webhook-signature); 0 = not at all. */
    rotationOverlapSeconds: numberEnv("WEBHOOK_ROTATION_OVERLAP_SECONDS", 24 * 3600, { min: 0 }),
    /** Finished deliveries (delivered or failed) are deleted after this many days. */
    retentionDays: numberEnv("WEBHOOK_RETENTION_DAYS", 30, { min: 1 }),
  };
}

export type WebhookConfig = ReturnType<typeof loadWebhookConfig>;
