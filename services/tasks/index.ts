/*
 * The tasks service's public face (docs/adr/0052-service-boundaries.md): the only file of services/tasks/ another
 * service may import. tasks and scheduled_tasks have one writer, this service's code: the scheduler claims and
 * records runs only through the functions below, and creates tasks through the `tasks.createScheduled` action.
 */

/** The scheduled_tasks collection: its model (for index registration) and record type. */
export { scheduledTaskModel, type ScheduledTaskRecord } from "./scheduled-model";
/** Due schedules, as the scheduler claims them and records their runs. */
export { claimOccurrence, describeRunError, dueSchedules, recordRunOutcome, type DueSchedule } from "./scheduled-runs";
