import type { FieldProblem } from "../../lib/errors";
import { DEFAULT_TIMEZONE, nextOccurrence, timingFields } from "../../lib/cron";
import type { RefreshPolicy } from "./model";

/** Shortest refresh interval: a site re-read more often than this is being polled, not kept fresh. */
export const MIN_REFRESH_INTERVAL_SECONDS = 60;
/** Longest: a year. */
export const MAX_REFRESH_INTERVAL_SECONDS = 366 * 24 * 3600;

/** The `refresh` body field of KnowledgeSourceCreate/Update: additive and nullable (null removes the policy). */
export const refreshParam = {
  type: "object",
  optional: true,
  nullable: true,
  strict: true,
  props: {
    interval_seconds: { type: "number", integer: true, min: MIN_REFRESH_INTERVAL_SECONDS, max: MAX_REFRESH_INTERVAL_SECONDS, optional: true, nullable: true },
    cron: { type: "string", min: 1, max: 200, trim: true, optional: true, nullable: true },
    timezone: { type: "string", min: 1, max: 100, trim: true, optional: true },
    prune: { type: "boolean", optional: true },
  },
} as const;

/** The refresh field as validated. */
export type RefreshInput = { interval_seconds?: number | null; cron?: string | null; timezone?: string; prune?: boolean };

/**
 * The policy to store, or the problems of the given one: exactly one of interval_seconds and cron, a 5- or
 * 6-field cron expression and an IANA time zone by the scheduled tasks' rules; prune defaults to true.
 */
export function refreshPolicy(input: RefreshInput): { policy: RefreshPolicy | null; problems: FieldProblem[] } {
  const interval = input.interval_seconds ?? null;
  const cron = input.cron ?? null;
  if ((interval === null) === (cron === null)) {
    return { policy: null, problems: [{ field: "refresh", message: "Give exactly one of refresh.interval_seconds and refresh.cron", type: "refresh" }] };
  }
  const { fields, problems } = timingFields({ schedule: cron ?? undefined, timezone: input.timezone });
  const located = problems.map((p) => ({ ...p, field: `refresh.${p.field === "schedule" ? "cron" : p.field}` }));
  if (located.length) return { policy: null, problems: located };
  const policy = { interval_seconds: interval, cron: fields.schedule ?? null, timezone: fields.timezone ?? DEFAULT_TIMEZONE, prune: input.prune ?? true };
  return { policy, problems: [] };
}

/** When a source with this policy refreshes next after `now`; null without a policy. */
export function nextRefreshAt(policy: RefreshPolicy | null, now: Date): Date | null {
  if (!policy) return null;
  if (policy.interval_seconds) return new Date(now.getTime() + policy.interval_seconds * 1000);
  return nextOccurrence(policy.cron!, policy.timezone, now);
}
