import { freeJsonRule } from "../../lib/free-json";
import { TASK_PRIORITIES, TASK_STATUSES } from "./model";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;
const taskRef = { type: "number", integer: true, positive: true, optional: true, nullable: true } as const;
const queryRef = { type: "number", integer: true, positive: true, convert: true, optional: true } as const;

/** TaskCreate body; dependency_ids is read-only (changed through the dependency endpoints) and dropped. */
export const taskFields = {
  title: { type: "string", min: 1, max: 500, trim: true },
  description: text(50_000),
  status: { type: "enum", values: [...TASK_STATUSES], optional: true },
  task_type: { type: "string", min: 1, max: 100, trim: true, optional: true },
  priority: { type: "enum", values: [...TASK_PRIORITIES], optional: true },
  parent_id: taskRef,
  team_id: taskRef,
  agent_id: taskRef,
  session_id: { type: "string", min: 1, max: 255, optional: true, nullable: true },
  input: freeJsonRule({ type: "object", optional: true }),
  result: freeJsonRule({ type: "object", optional: true, nullable: true }),
} as const;

/** TaskUpdate: the create fields, all optional; null clears a nullable one. */
export const taskUpdateFields = { ...taskFields, title: { ...taskFields.title, optional: true } } as const;

/** The fields a schedule's task template may set: what a new task starts with. */
export const TEMPLATE_KEYS = ["title", "description", "task_type", "priority", "team_id", "agent_id", "session_id", "input"] as const;
/** Validation rules of a task template, the task create rules of those fields. */
export const taskTemplateProps = Object.fromEntries(TEMPLATE_KEYS.map((k) => [k, taskFields[k]]));

/** Optional filters of GET /tasks (query strings converted). */
export const taskFilters = {
  status: { type: "enum", values: [...TASK_STATUSES], optional: true },
  team_id: queryRef,
  agent_id: queryRef,
  parent_id: queryRef,
  task_type: { type: "string", min: 1, max: 100, optional: true },
  session_id: { type: "string", min: 1, max: 255, optional: true },
} as const;

/** Path parameters of the single-task endpoints. */
export const taskIdParam = { task_id: { type: "number", integer: true, positive: true, convert: true } } as const;
/** Path parameters of the dependency endpoints. */
export const dependencyParams = { ...taskIdParam, dependency_id: { type: "number", integer: true, positive: true, convert: true } } as const;

/** Validated task fields of a create, update or schedule run. */
export type TaskFields = {
  title?: string;
  description?: string | null;
  status?: (typeof TASK_STATUSES)[number];
  task_type?: string;
  priority?: (typeof TASK_PRIORITIES)[number];
  parent_id?: number | null;
  team_id?: number | null;
  agent_id?: number | null;
  session_id?: string | null;
  input?: Record<string, unknown>;
  result?: Record<string, unknown> | null;
};

/** Keeps only the named keys that are set, so extra body or query keys never reach the database. */
export function pickDefined(params: object, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (params as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
