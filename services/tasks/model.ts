import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { freeJson, freeJsonFields } from "../../lib/free-json";

/** pending until picked up; blocked is set by clients (e.g. waiting for input); the last three are final. */
export const TASK_STATUSES = ["pending", "in_progress", "blocked", "completed", "failed", "cancelled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Named levels rather than numbers, so every client ranks the same way; medium is the default. */
export const TASK_PRIORITIES = ["low", "medium", "high", "urgent"] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

/** The task type of a task created without one. */
export const DEFAULT_TASK_TYPE = "general";

/** A task as stored; its public JSON is the same fields with `_id` shown as `id`. */
export interface TaskRecord {
  _id: number;
  account_id: number;
  title: string;
  description: string | null;
  status: TaskStatus;
  task_type: string;
  priority: TaskPriority;
  parent_id: number | null;
  team_id: number | null;
  agent_id: number | null;
  session_id: string | null;
  input: Record<string, unknown>;
  result: Record<string, unknown> | null;
  /** Tasks this one waits for; changed only through the dependency endpoints. */
  dependency_ids: number[];
  /** The schedule and the occurrence that created this task, when a schedule did. */
  scheduled_task_id: number | null;
  scheduled_for: Date | null;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const taskSchema = new Schema<TaskRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    title: { type: String, required: true },
    description: { type: String, default: null },
    status: { type: String, enum: TASK_STATUSES, default: "pending" },
    task_type: { type: String, default: DEFAULT_TASK_TYPE },
    priority: { type: String, enum: TASK_PRIORITIES, default: "medium" },
    parent_id: { type: Number, default: null },
    team_id: { type: Number, default: null },
    agent_id: { type: Number, default: null },
    session_id: { type: String, default: null },
    input: freeJson({ default: () => ({}) }),
    result: freeJson({ default: null }),
    dependency_ids: { type: [Number], default: [] },
    scheduled_task_id: { type: Number, default: null },
    scheduled_for: { type: Date, default: null },
    completed_at: { type: Date, default: null },
  },
  { ...recordSchemaOptions<TaskRecord>(), minimize: false },
);
taskSchema.plugin(freeJsonFields);
// The list's sort and filters, subtasks of a parent, and the links a delete removes.
taskSchema.index({ account_id: 1, created_at: -1, _id: -1 });
taskSchema.index({ account_id: 1, status: 1 });
taskSchema.index({ account_id: 1, parent_id: 1, _id: 1 });
taskSchema.index({ account_id: 1, dependency_ids: 1 });

/** The tasks model on a given connection. */
export function taskModel(db: Connection): Model<TaskRecord> {
  return (db.models.Task as Model<TaskRecord>) ?? db.model<TaskRecord>("Task", taskSchema);
}
