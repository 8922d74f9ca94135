import type { FieldProblem } from "../../lib/errors";
import { taskTemplateProps } from "../tasks/params";
import { canonicalTimezone, cronProblem } from "./cron";
import type { TaskTemplate } from "./model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;

/** ScheduledTaskCreate body; next_run_at, last_run_at, last_task_id, last_error and run_count are read-only. */
export const scheduledTaskFields = {
  name: { type: "string", min: 1, max: 255, trim: true },
  description: text(10_000),
  schedule: { type: "string", min: 1, max: 200, trim: true },
  timezone: { type: "string", min: 1, max: 100, trim: true, optional: true },
  enabled: { type: "boolean", optional: true },
  // Unknown template keys are dropped like unknown body keys.
  task_template: { type: "object", strict: "remove", props: taskTemplateProps },
} as const;

/** ScheduledTaskUpdate: every create field optional; a given task_template replaces the stored one whole. */
export const scheduledTaskUpdateFields = Object.fromEntries(
  Object.entries(scheduledTaskFields).map(([key, rule]) => [key, { ...rule, optional: true }]),
) as { [K in keyof typeof scheduledTaskFields]: (typeof scheduledTaskFields)[K] & { optional: true } };

/** Body keys a client may set on a schedule; everything else is dropped. */
export const SCHEDULED_TASK_KEYS = Object.keys(scheduledTaskFields);

/** Path parameter of the single-schedule endpoints. */
export const scheduledTaskIdParam = { scheduled_task_id: { type: "number", integer: true, positive: true, convert: true } } as const;

/** Validated schedule fields of a create or update. */
export type ScheduledTaskParams = {
  name?: string;
  description?: string | null;
  schedule?: string;
  timezone?: string;
  enabled?: boolean;
  task_template?: TaskTemplate;
};

/**
 * Checks the timing fields given in a create or update: the cron expression must parse and the time zone must be
 * an IANA name (stored in its canonical case). Returns the fields to store and one problem per bad field.
 */
export function timingFields(params: Pick<ScheduledTaskParams, "schedule" | "timezone">): {
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
