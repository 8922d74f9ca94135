import { freeJsonRule } from "../../lib/free-json";
import { defineResource, defineView, type Rule } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { DEFAULT_TASK_TYPE, TASK_PRIORITIES, TASK_STATUSES } from "./model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;
const taskRef = { type: "number", integer: true, positive: true, optional: true, nullable: true } as const;
const queryRef = { type: "number", integer: true, positive: true, convert: true, optional: true } as const;

/** The interface states no bound for task lists; unbounded lists are a denial-of-service risk. */
export const TASK_PAGE = { max: 1000, def: 100 };

/** Tasks. dependency_ids is read-only (changed through the dependency endpoints); a body's copy is dropped. */
export const tasks = defineResource({
  name: "Task",
  collection: "tasks",
  storage: {
    name: "Task",
    minimize: false,
    // The list's sort and filters, subtasks of a parent, and the links a delete removes.
    indexes: [
      [{ account_id: 1, created_at: -1, _id: -1 }],
      [{ account_id: 1, status: 1 }],
      [{ account_id: 1, parent_id: 1, _id: 1 }],
      [{ account_id: 1, dependency_ids: 1 }],
    ],
  },
  path: "/tasks",
  idParam: "task_id",
  event: "task",
  fields: {
    title: { write: { type: "string", min: 1, max: 500, trim: true }, store: stored.string({ required: true }) },
    description: { write: text(50_000), store: stored.string({ default: null }) },
    status: {
      write: { type: "enum", values: TASK_STATUSES, optional: true },
      read: { type: "enum", values: TASK_STATUSES },
      store: stored.string({ enum: TASK_STATUSES, default: "pending" }),
    },
    task_type: { write: { type: "string", min: 1, max: 100, trim: true, optional: true }, store: stored.string({ default: DEFAULT_TASK_TYPE }) },
    priority: {
      write: { type: "enum", values: TASK_PRIORITIES, optional: true },
      read: { type: "enum", values: TASK_PRIORITIES },
      store: stored.string({ enum: TASK_PRIORITIES, default: "medium" }),
    },
    parent_id: { write: taskRef, store: stored.int({ default: null, ref: "tasks" }) },
    team_id: { write: taskRef, store: stored.int({ default: null, ref: "teams" }) },
    agent_id: { write: taskRef, store: stored.int({ default: null, ref: "agents" }) },
    session_id: { write: { type: "string", min: 1, max: 255, optional: true, nullable: true }, store: stored.string({ default: null }) },
    input: { write: freeJsonRule({ type: "object", optional: true }), store: stored.json({ default: () => ({}) }) },
    result: { write: freeJsonRule({ type: "object", optional: true, nullable: true }), store: stored.json({ default: null }) },
    /** Tasks this one waits for; changed only through the dependency endpoints. */
    dependency_ids: { store: stored.ints({ ref: "tasks" }) },
    /** The schedule and the occurrence that created this task, when a schedule did. */
    scheduled_task_id: { store: stored.int({ default: null, ref: "scheduled_tasks" }) },
    scheduled_for: { store: stored.date({ default: null }) },
    completed_at: { store: stored.date({ default: null }) },
  },
  list: { limits: TASK_PAGE, sort: { created_at: -1, _id: -1 }, bare: true },
});

/** The tasks model on a given connection. */
export const taskModel = tasks.model;
/** A task as stored; its public JSON is the same fields with `_id` shown as `id`. */
export type TaskRecord = typeof tasks.types.record;

/** Validated task fields of a create, update or schedule run. */
export type TaskFields = typeof tasks.types.update;

const summary = <P extends Record<string, Rule>>(props: P) => ({ type: "object", nullable: true, props: { id: { type: "number", integer: true }, ...props } }) as const;
const taskSummary = summary({ title: { type: "string" }, status: { type: "enum", values: TASK_STATUSES } });
const namedSummary = summary({ name: { type: "string" }, identifier: { type: "string" } });
/** GET /tasks/{id}: the task with its relations resolved (render.ts taskDetail). */
export const TaskDetail = defineView("TaskDetail", {
  ...tasks.view.fields,
  parent: { read: taskSummary },
  team: { read: namedSummary },
  agent: { read: namedSummary },
  dependencies: { read: { type: "array", items: { ...taskSummary, nullable: false } } },
  subtask_count: { read: { type: "number", integer: true } },
});

/** The fields a schedule's task template may set: what a new task starts with. */
export const TEMPLATE_KEYS = ["title", "description", "task_type", "priority", "team_id", "agent_id", "session_id", "input"] as const;
/** Validation rules of a task template, the task create rules of those fields. */
export const taskTemplateProps = Object.fromEntries(TEMPLATE_KEYS.map((k) => [k, tasks.createParams[k]!]));

/** Optional filters of GET /tasks (query strings converted). */
export const taskFilters = {
  status: { type: "enum", values: [...TASK_STATUSES], optional: true, description: "Only tasks in this status" },
  team_id: { ...queryRef, description: "Only tasks assigned to this team" },
  agent_id: { ...queryRef, description: "Only tasks assigned to this agent" },
  parent_id: { ...queryRef, description: "Only subtasks of this task" },
  task_type: { type: "string", min: 1, max: 100, optional: true, description: "Only tasks of this type" },
  session_id: { type: "string", min: 1, max: 255, optional: true, description: "Only tasks of this session" },
} as const;

/** Path parameters of the dependency endpoints. */
export const dependencyParams = { ...tasks.idParams, dependency_id: { type: "number", integer: true, positive: true, convert: true, description: "The id of the task depended on" } } as const;

/** Keeps only the named keys that are set, so extra body or query keys never reach the database. */
export function pickDefined(params: object, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (params as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
