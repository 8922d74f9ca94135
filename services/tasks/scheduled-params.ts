import { taskTemplateProps } from "./params";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";
import type { TaskTemplate } from "./scheduled-model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;

/** Schedules that create tasks; next_run_at, last_run_at, last_task_id, last_error and run_count are read-only. */
export const scheduledTasks = defineResource({
  name: "ScheduledTask",
  label: "Scheduled task",
  collection: "scheduled_tasks",
  storage: {
    name: "ScheduledTask",
    collection: "scheduled_tasks",
    minimize: false,
    // The account's list, and the scheduler's due query across accounts.
    indexes: [[{ account_id: 1, created_at: -1, _id: -1 }], [{ enabled: 1, next_run_at: 1, _id: 1 }]],
  },
  path: "/scheduled-tasks",
  idParam: "scheduled_task_id",
  event: "scheduled_task",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true }, store: stored.string({ required: true }) },
    description: { write: text(10_000), store: stored.string({ default: null }) },
    /** Cron expression: 5 fields, or 6 with seconds first; fires at most once a minute (lib/cron.ts). */
    schedule: { write: { type: "string", min: 1, max: 200, trim: true }, store: stored.string({ required: true }) },
    /** IANA time zone the expression is read in. */
    timezone: { write: { type: "string", min: 1, max: 100, trim: true, optional: true }, store: stored.string({ default: "UTC" }) },
    enabled: { write: { type: "boolean", optional: true }, store: stored.boolean({ default: true }) },
    // Unknown template keys are a 422 like unknown body keys; a given template replaces the stored one whole.
    task_template: {
      write: { type: "object", strict: true, props: taskTemplateProps },
      read: { type: "object", props: taskTemplateProps },
      store: stored.json<TaskTemplate>({ required: true }),
    },
    /** The next occurrence while enabled (null while disabled); computed, never set by clients. */
    next_run_at: { store: stored.date({ default: null }) },
    last_run_at: { store: stored.date({ default: null }) },
    last_task_id: { store: stored.int({ default: null, ref: "tasks" }) },
    /** Why the last run created no task, cleared by the next run that does. */
    last_error: { store: stored.string({ default: null }) },
    run_count: { store: stored.int({ default: 0 }) },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** The scheduled tasks model on a given connection. */
export const scheduledTaskModel = scheduledTasks.model;
/** A schedule as stored (collection scheduled_tasks); its public JSON shows `_id` as `id`. */
export type ScheduledTaskRecord = typeof scheduledTasks.types.record;

/** Validated schedule fields of a create or update. */
export type ScheduledTaskParams = typeof scheduledTasks.types.update;
