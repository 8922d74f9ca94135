import type { Model } from "mongoose";
import { nextOccurrence } from "../../lib/cron";
import type { ScheduledTaskRecord } from "./scheduled-model";
import { DueQueue, modelStore } from "../../lib/lease-queue";

/** What a run needs of a due schedule. */
export type DueSchedule = Pick<ScheduledTaskRecord, "_id" | "account_id" | "schedule" | "timezone" | "next_run_at" | "task_template">;

/**
 * The schedules as a due queue (lib/lease-queue.ts). The scheduler's one query across accounts lists what is
 * due: it is a worker acting for every account, and each run then acts as the schedule's own account. Run
 * bookkeeping leaves updated_at to client edits.
 */
function scheduleQueue(model: Model<ScheduledTaskRecord>): DueQueue<ScheduledTaskRecord> {
  return new DueQueue(modelStore(model, { timestamps: false }), { due: "next_run_at", crossAccount: "the scheduler's due schedules of every account" });
}

/** Enabled schedules whose next run is due, most overdue first. */
export function dueSchedules(model: Model<ScheduledTaskRecord>, now: Date, limit: number): Promise<DueSchedule[]> {
  const projection = { account_id: 1, schedule: 1, timezone: 1, next_run_at: 1, task_template: 1 } as const;
  return scheduleQueue(model).list(now, limit, { filter: { enabled: true }, projection });
}

/**
 * Claims the occurrence a replica saw as due, with one atomic update that matches only while the schedule is
 * unchanged since it was read (same next_run_at, expression, zone, still enabled). Of several replicas exactly
 * one matches; the others get null. The claim moves next_run_at to the first occurrence after now, so an outage
 * costs one run, not one per missed slot.
 */
export function claimOccurrence(model: Model<ScheduledTaskRecord>, due: DueSchedule, now: Date): Promise<ScheduledTaskRecord | null> {
  return scheduleQueue(model).claim({ _id: due._id, account_id: due.account_id }, due.next_run_at, nextOccurrence(due.schedule, due.timezone, now), {
    match: { enabled: true, schedule: due.schedule, timezone: due.timezone },
    update: { $set: { last_run_at: now }, $inc: { run_count: 1 } },
  });
}

/** Records what a claimed run produced: the task it created, or why it created none. */
export async function recordRunOutcome(
  model: Model<ScheduledTaskRecord>,
  due: Pick<DueSchedule, "_id" | "account_id">,
  outcome: { taskId: number } | { error: string },
): Promise<void> {
  const fields = "taskId" in outcome ? { last_task_id: outcome.taskId, last_error: null } : { last_error: outcome.error };
  await model.updateOne({ _id: due._id, account_id: due.account_id }, { $set: fields }, { timestamps: false });
}

/** A run failure as one readable line: validation problems (e.g. the template's team was deleted) are listed. */
export function describeRunError(err: unknown): string {
  const { message, data } = (err ?? {}) as { message?: string; data?: unknown };
  if (Array.isArray(data) && data.length) {
    return data.map((p: { field?: string; message?: string }) => p.message ?? String(p.field)).join("; ");
  }
  return message || "Task creation failed";
}
