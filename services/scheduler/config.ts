import { positiveIntEnv } from "../../lib/env";

/** Scheduler settings, read when the service starts (tests set the environment before starting a cluster). */
export function loadSchedulerConfig() {
  return {
    /** How often a scheduler looks for due schedules; also the worst-case delay of a run. */
    pollMs: positiveIntEnv("SCHEDULER_POLL_MS", 1000),
    /** Due schedules handled per look; a full batch is followed at once by the next. */
    batchSize: positiveIntEnv("SCHEDULER_BATCH_SIZE", 100),
  };
}

/** Resolved scheduler settings. */
export type SchedulerConfig = ReturnType<typeof loadSchedulerConfig>;
