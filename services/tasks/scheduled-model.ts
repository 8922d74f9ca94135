import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { freeJson, freeJsonFields } from "../../lib/free-json";

/** What each run creates: the fields of a new task (validated like a task create). */
export interface TaskTemplate {
  title: string;
  description?: string | null;
  task_type?: string;
  priority?: string;
  team_id?: number | null;
  agent_id?: number | null;
  session_id?: string | null;
  input?: Record<string, unknown>;
}

/** A schedule as stored (collection scheduled_tasks); its public JSON shows `_id` as `id`. */
export interface ScheduledTaskRecord {
  _id: number;
  account_id: number;
  name: string;
  description: string | null;
  /** Cron expression: 5 fields, or 6 with seconds first; fires at most once a minute (lib/cron.ts). */
  schedule: string;
  /** IANA time zone the expression is read in. */
  timezone: string;
  enabled: boolean;
  task_template: TaskTemplate;
  /** The next occurrence while enabled (null while disabled); computed, never set by clients. */
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_task_id: number | null;
  /** Why the last run created no task, cleared by the next run that does. */
  last_error: string | null;
  run_count: number;
  created_at: Date;
  updated_at: Date;
}

const scheduledTaskSchema = new Schema<ScheduledTaskRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    schedule: { type: String, required: true },
    timezone: { type: String, default: "UTC" },
    enabled: { type: Boolean, default: true },
    task_template: freeJson({ required: true }),
    next_run_at: { type: Date, default: null },
    last_run_at: { type: Date, default: null },
    last_task_id: { type: Number, default: null },
    last_error: { type: String, default: null },
    run_count: { type: Number, default: 0 },
  },
  { ...recordSchemaOptions<ScheduledTaskRecord>(), collection: "scheduled_tasks", minimize: false },
);
scheduledTaskSchema.plugin(freeJsonFields);
// The account's list, and the scheduler's due query across accounts.
scheduledTaskSchema.index({ account_id: 1, created_at: -1, _id: -1 });
scheduledTaskSchema.index({ enabled: 1, next_run_at: 1, _id: 1 });

/** The scheduled tasks model on a given connection. */
export function scheduledTaskModel(db: Connection): Model<ScheduledTaskRecord> {
  return (db.models.ScheduledTask as Model<ScheduledTaskRecord>) ?? db.model<ScheduledTaskRecord>("ScheduledTask", scheduledTaskSchema);
}
