import { freeJsonRule } from "../../lib/free-json";
import { defineResource, defineView, type Rule } from "../../lib/resource";
import { TASK_PRIORITIES, TASK_STATUSES, taskModel } from "./model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;
const taskRef = { type: "number", integer: true, positive: true, optional: true, nullable: true } as const;
const queryRef = { type: "number", integer: true, positive: true, convert: true, optional: true } as const;

const nullableInt = { type: "number", integer: true, nullable: true } as const;
const nullableDate = { type: "date", nullable: true } as const;
/** The interface states no bound for task lists; unbounded lists are a denial-of-service risk. */
export const TASK_PAGE = { max: 1000, def: 100 };

/** Tasks. dependency_ids is read-only (changed through the dependency endpoints); a body's copy is dropped. */
export const tasks = defineResource({
  name: "Task",
  collection: "tasks",
  model: taskModel,
  path: "/tasks",
  idParam: "task_id",
  event: "task",
  fields: {
    title: { write: { type: "string", min: 1, max: 500, trim: true } },
    description: { write: text(50_000) },
    status: { write: { type: "enum", values: TASK_STATUSES, optional: true }, read: { type: "enum", values: TASK_STATUSES } },
    task_type: { write: { type: "string", min: 1, max: 100, trim: true, optional: true } },
    priority: { write: { type: "enum", values: TASK_PRIORITIES, optional: true }, read: { type: "enum", values: TASK_PRIORITIES } },
    parent_id: { write: taskRef },
    team_id: { write: taskRef },
    agent_id: { write: taskRef },
    session_id: { write: { type: "string", min: 1, max: 255, optional: true, nullable: true } },
    input: { write: freeJsonRule({ type: "object", optional: true }) },
    result: { write: freeJsonRule({ type: "object", optional: true, nullable: true }) },
    dependency_ids: { read: { type: "array", items: { type: "number", integer: true } } },
    scheduled_task_id: { read: nullableInt },
    scheduled_for: { read: nullableDate },
    completed_at: { read: nullableDate },
  },
  list: { limits: TASK_PAGE, sort: { created_at: -1, _id: -1 }, bare: true },
});

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
