import { taskTemplateProps } from "./params";
import { defineResource } from "../../lib/resource";
import { scheduledTaskModel } from "./scheduled-model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;

const nullable = <T extends string>(type: T) => ({ type, nullable: true }) as const;

/** Schedules that create tasks; next_run_at, last_run_at, last_task_id, last_error and run_count are read-only. */
export const scheduledTasks = defineResource({
  name: "ScheduledTask",
  label: "Scheduled task",
  collection: "scheduled_tasks",
  model: scheduledTaskModel,
  path: "/scheduled-tasks",
  idParam: "scheduled_task_id",
  event: "scheduled_task",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    description: { write: text(10_000) },
    schedule: { write: { type: "string", min: 1, max: 200, trim: true } },
    timezone: { write: { type: "string", min: 1, max: 100, trim: true, optional: true } },
    enabled: { write: { type: "boolean", optional: true } },
    // Unknown template keys are a 422 like unknown body keys; a given template replaces the stored one whole.
    task_template: { write: { type: "object", strict: true, props: taskTemplateProps }, read: { type: "object", props: taskTemplateProps } },
    next_run_at: { read: nullable("date") },
    last_run_at: { read: nullable("date") },
    last_task_id: { read: { type: "number", integer: true, nullable: true } },
    last_error: { read: nullable("string") },
    run_count: { read: { type: "number", integer: true } },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** Validated schedule fields of a create or update. */
export type ScheduledTaskParams = typeof scheduledTasks.types.update;
