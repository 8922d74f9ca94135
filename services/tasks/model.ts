/** pending until picked up; blocked is set by clients (e.g. waiting for input); the last three are final. */
export const TASK_STATUSES = ["pending", "in_progress", "blocked", "completed", "failed", "cancelled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Named levels rather than numbers, so every client ranks the same way; medium is the default. */
export const TASK_PRIORITIES = ["low", "medium", "high", "urgent"] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

/** The task type of a task created without one. */
export const DEFAULT_TASK_TYPE = "general";

// A task's fields, storage included, are declared once in ./params.ts; its model and record type derive from them.
// Exported last: ./params.ts reads the values above while this module loads.
export { taskModel, type TaskRecord } from "./params";
