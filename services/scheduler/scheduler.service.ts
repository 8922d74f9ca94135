import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { MongoMixin } from "../../lib/mongo.mixin";
import { asAccount } from "../../lib/meta";
import { configOf, type Config } from "../../lib/config";
import {
  claimRefresh,
  dueRefreshes,
  knowledgeSourceModel,
  loadJobModel,
  queueRefresh,
  type KnowledgeSourceRecord,
  type LoadJobRecord,
} from "../knowledge";
import {
  claimOccurrence,
  describeRunError,
  dueSchedules,
  recordRunOutcome,
  scheduledTaskModel,
  type DueSchedule,
  type ScheduledTaskRecord,
} from "../tasks";

interface Vars {
  db: Connection;
  models: { schedules: Model<ScheduledTaskRecord>; sources: Model<KnowledgeSourceRecord>; jobs: Model<LoadJobRecord> };
  config: Config["scheduler"];
  running: boolean;
  loop?: Promise<void>;
  /** Ends the current pause early (on stop). */
  wake?: () => void;
}
interface Methods {
  poll(): Promise<void>;
  runDue(now: Date): Promise<number>;
  queueDueRefreshes(now: Date): Promise<number>;
  runOccurrence(due: DueSchedule, now: Date): Promise<void>;
  pause(ms: number): Promise<void>;
}

/**
 * Runs due scheduled tasks: every SCHEDULER_POLL_MS it claims each due occurrence with one atomic update, so any
 * number of replicas run each occurrence once, then creates the task as the schedule's account through the tasks
 * service. A run is at most once: a task creation that fails is recorded in last_error and not retried.
 * Scheduled-task CRUD is served by the tasks service. Knowledge sources' refresh policies are claimed by the
 * same rule and queued as load jobs for the knowledge loaders.
 */
const SchedulerService: ServiceSchema<Record<string, never>, Methods, Vars> = {
  name: "scheduler",
  mixins: [MongoMixin((db) => ({ schedules: scheduledTaskModel(db), sources: knowledgeSourceModel(db), jobs: loadJobModel(db) }))],
  settings: {},
  dependencies: ["tasks"],

  methods: {
    async poll() {
      while (this.running) {
        const now = new Date();
        const found = await this.runDue(now).catch((err) => {
          this.logger.warn("Looking for due schedules failed", err);
          return 0;
        });
        const refreshes = await this.queueDueRefreshes(now).catch((err) => {
          this.logger.warn("Looking for due knowledge refreshes failed", err);
          return 0;
        });
        if (found < this.config.batchSize && refreshes < this.config.batchSize) await this.pause(this.config.pollMs);
      }
    },

    /** Runs one batch of due schedules; returns how many were due. */
    async runDue(now) {
      const due = await dueSchedules(this.models.schedules, now, this.config.batchSize);
      for (const schedule of due) {
        if (!this.running) break;
        await this.runOccurrence(schedule, now).catch((err) => this.logger.error(`Scheduled task ${schedule._id} failed to run`, err));
      }
      return due.length;
    },

    /** Queues one batch of due knowledge-source refreshes; returns how many were due. */
    async queueDueRefreshes(now) {
      const due = await dueRefreshes(this.models.sources, now, this.config.batchSize);
      for (const source of due) {
        if (!this.running) break;
        // null: another replica queues this refresh, or the policy changed since it was read.
        if (!(await claimRefresh(this.models.sources, source, now))) continue;
        await queueRefresh(this.models.jobs, source).catch((err) => this.logger.error(`Refresh of knowledge source ${source._id} was not queued`, err));
      }
      return due.length;
    },

    async runOccurrence(due, now) {
      // null: another replica runs this occurrence, or the schedule changed since it was read.
      if (!(await claimOccurrence(this.models.schedules, due, now))) return;
      const params = { ...due.task_template, scheduled_task_id: due._id, scheduled_for: due.next_run_at };
      try {
        const task = await this.broker.call<{ id: number }, typeof params>("tasks.createScheduled", params, asAccount(due.account_id));
        await recordRunOutcome(this.models.schedules, due, { taskId: task.id });
      } catch (err) {
        this.logger.warn(`Scheduled task ${due._id} created no task: ${describeRunError(err)}`);
        await recordRunOutcome(this.models.schedules, due, { error: describeRunError(err) });
      }
    },

    pause(ms) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
  },

  started() {
    this.config = configOf(this).scheduler;
    this.running = true;
    this.loop = this.poll();
  },

  async stopped() {
    this.running = false;
    this.wake?.();
    await this.loop;
  },
};

export default SchedulerService;
