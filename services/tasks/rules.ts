import type { FieldProblem } from "../../lib/errors";
import type { TaskStatus } from "./model";

/** Moving into these needs every dependency completed: work neither starts nor finishes before what it waits for. */
export const STATUSES_NEEDING_DEPENDENCIES: readonly TaskStatus[] = ["in_progress", "completed"];

/** The status and completed_at after a change: completed_at is set when a task becomes completed and cleared when it leaves. */
export function statusFields(
  current: { status: TaskStatus; completed_at: Date | null } | null,
  next: TaskStatus,
  now: Date,
): { status: TaskStatus; completed_at: Date | null } {
  if (current?.status === next) return { status: next, completed_at: current.completed_at };
  return { status: next, completed_at: next === "completed" ? now : null };
}

/** Ids of the dependencies that stop a move from `current` to `next`; empty when the move is allowed. */
export function unmetDependencies(current: TaskStatus, next: TaskStatus, dependencies: { id: number; status: TaskStatus }[]): number[] {
  if (next === current || !STATUSES_NEEDING_DEPENDENCIES.includes(next)) return [];
  return dependencies.filter((d) => d.status !== "completed").map((d) => d.id);
}

/** A task may not be its own parent or its own dependency; `field` names where the reference came from. */
export function selfReferenceProblem(taskId: number, refId: number | null | undefined, field: string, location?: string): FieldProblem | null {
  if (refId !== taskId) return null;
  return { field, message: `A task cannot reference itself in '${field}'`, type: "reference.self", ...(location ? { location } : {}) };
}

/** task_type of the task a signup creates when onboarding tasks are enabled. */
export const ONBOARDING_TASK_TYPE = "onboarding";

/** The onboarding task of a new user (ONBOARDING_TASK_ENABLED): what to do first, assigned to nobody yet. */
export function onboardingTask(userId: number, email: string) {
  return {
    title: "Set up your account",
    description: `Welcome ${email}: create your first agent, add a knowledge source and invite your team.`,
    task_type: ONBOARDING_TASK_TYPE,
    input: { user_id: userId },
  };
}
