import { CronExpressionParser } from "cron-parser";
import type { FieldProblem } from "./errors";

/** The zone a schedule created without one is read in. */
export const DEFAULT_TIMEZONE = "UTC";

/** Canonical spellings of the zones the runtime knows, looked up case-insensitively ("europe/berlin" -> "Europe/Berlin"). */
const CANONICAL_ZONES = new Map([DEFAULT_TIMEZONE, ...Intl.supportedValuesOf("timeZone")].map((zone) => [zone.toLowerCase(), zone]));

/**
 * Why a cron expression is refused, or null when it is usable: 5 fields (minute hour day-of-month month
 * day-of-week) or 6 with seconds first, in cron-parser's syntax, with at least one future occurrence, firing at
 * most once a minute. Two firings are closer than a minute exactly when the seconds field names several seconds
 * (with one second, firings fall in different minutes at that second), so that is what is refused: a schedule
 * polls no faster than the shortest refresh interval (60 s), and `* * * * * *` cannot flood a tenant's tasks.
 */
export function cronProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5 && fields.length !== 6) {
    return `Invalid cron expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${fields.length}`;
  }
  // cron-parser reads Jenkins' H as a value drawn anew at each parse: "H * * * * *" fired at a different second each
  // time it was read (twice in one minute), and four equal schedules got four times. Kubernetes' cron has no H.
  if (fields.some((field) => /(^|[^a-z])h(?![a-z])/i.test(field))) {
    return `Invalid cron expression: H (a hashed value) is not supported; give the minute, hour or second itself`;
  }
  try {
    const parsed = CronExpressionParser.parse(fields.join(" "), { tz: DEFAULT_TIMEZONE });
    parsed.next();
    if (parsed.fields.second.values.length > 1) {
      return `Cron expression fires more than once a minute (seconds field "${fields[0]}"): a schedule fires at most once a minute, so give one second, e.g. "0 ${fields.slice(1).join(" ")}"`;
    }
    return null;
  } catch (err) {
    return `Invalid cron expression: ${(err as Error).message}`;
  }
}

/** The IANA zone name as stored (canonical case), or null when it is not one; UTC offsets such as "+01:00" are refused. */
export function canonicalTimezone(name: string): string | null {
  const trimmed = name.trim();
  if (!trimmed || /^[+-]\d/.test(trimmed)) return null;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: trimmed });
  } catch {
    return null;
  }
  return CANONICAL_ZONES.get(trimmed.toLowerCase()) ?? trimmed;
}

/** The first occurrence strictly after `after`, reading the expression in `timezone` (DST gaps and repeats as cron-parser does). */
export function nextOccurrence(expression: string, timezone: string, after: Date): Date {
  const normalized = expression.trim().split(/\s+/).join(" ");
  return CronExpressionParser.parse(normalized, { tz: timezone, currentDate: after }).next().toDate();
}

/**
 * When a schedule runs next: null while disabled, else the first occurrence after `now`. Occurrences missed while
 * no scheduler ran are never replayed one by one: the overdue one runs once and the next is computed from now.
 */
export function nextRunAt(schedule: { schedule: string; timezone: string; enabled: boolean }, now: Date): Date | null {
  return schedule.enabled ? nextOccurrence(schedule.schedule, schedule.timezone, now) : null;
}

/**
 * Checks the timing fields given in a create or update: the cron expression must parse and the time zone must be
 * an IANA name (stored in its canonical case). Returns the fields to store and one problem per bad field.
 */
export function timingFields(params: { schedule?: string; timezone?: string }): {
  fields: { schedule?: string; timezone?: string };
  problems: FieldProblem[];
} {
  const fields: { schedule?: string; timezone?: string } = {};
  const problems: FieldProblem[] = [];
  if (params.schedule !== undefined) {
    const problem = cronProblem(params.schedule);
    if (problem) problems.push({ field: "schedule", message: problem, type: "cron" });
    else fields.schedule = params.schedule.trim().split(/\s+/).join(" ");
  }
  if (params.timezone !== undefined) {
    const zone = canonicalTimezone(params.timezone);
    if (!zone) problems.push({ field: "timezone", message: `Unknown time zone "${params.timezone}": use an IANA name such as "UTC" or "Europe/Berlin"`, type: "timezone" });
    else fields.timezone = zone;
  }
  return { fields, problems };
}
