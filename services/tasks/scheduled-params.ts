import { taskTemplateProps } from "./params";
import type { TaskTemplate } from "./scheduled-model";

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
