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

// A schedule's fields, storage included, are declared once in ./scheduled-params.ts; its model and record type
// derive from them.
export { scheduledTaskModel, type ScheduledTaskRecord } from "./scheduled-params";
