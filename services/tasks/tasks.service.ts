import type { Connection, HydratedDocument, Model } from "mongoose";
import type { Service, ServiceSchema } from "moleculer";
import { leanToJSON } from "../../lib/db";
import { ERRORS, type FieldProblem } from "../../lib/errors";
import { asAccount, type Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { paginationParams } from "../../lib/pagination";
import { crudActions, NO_CONTENT, plainResponse, type CrudHooks } from "../../lib/resource";
import { respondCreated, respondNoContent } from "../../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeOf, type ChangeEvent } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { USER_REGISTERED } from "../../lib/event-types";
import { nextRecordId } from "../../lib/ids";
import { reaches, type Neighbours } from "./graph";
import { taskModel, type TaskRecord, type TaskStatus } from "./model";
import { dependencyParams, pickDefined, TASK_PAGE, TaskDetail, taskFilters, tasks, taskTemplateProps, TEMPLATE_KEYS, type TaskFields } from "./params";
import { assigneeProblems } from "./references";
import { taskDetail } from "./render";
import { ONBOARDING_TASK_TYPE, onboardingTask, selfReferenceProblem, statusFields, unmetDependencies } from "./rules";
import { DEFAULT_TIMEZONE, nextRunAt, timingFields } from "../../lib/cron";
import { scheduledTaskModel, type ScheduledTaskRecord, type TaskTemplate } from "./scheduled-model";
import { scheduledTasks, type ScheduledTaskParams } from "./scheduled-params";
import { configOf } from "../../lib/config";

const FILTER_KEYS = Object.keys(taskFilters);
const taskIdParam = tasks.idParams;

type TaskDoc = HydratedDocument<TaskRecord>;
/** A task as the API returns it. */
type TaskView = { id: number } & Record<string, unknown>;
type Page = { skip: number; limit: number };

interface Methods extends TenancyMethods, EventsMethods {
  findTask(ctx: Ctx<unknown>, id: number): Promise<TaskDoc>;
  createTask(ctx: Ctx<unknown>, fields: TaskFields & Partial<Pick<TaskRecord, "scheduled_task_id" | "scheduled_for">>): Promise<TaskView>;
  applyChanges(ctx: Ctx<unknown>, task: TaskDoc, changes: TaskFields): Promise<void>;
  checkReferences(ctx: Ctx<unknown>, task: TaskDoc | null, fields: TaskFields): Promise<void>;
  checkStatusMove(task: TaskDoc, next: TaskStatus): Promise<void>;
  linkDependency(ctx: Ctx<unknown>, task: TaskDoc, dependency: TaskDoc): Promise<string>;
  removeTask(ctx: Ctx<unknown>, task: TaskDoc): Promise<void>;
  neighbours(accountId: number, field: "parent_id" | "dependency_ids"): Neighbours;
  checkSchedule(ctx: Ctx<unknown>, params: ScheduledTaskParams): Promise<Partial<ScheduledTaskRecord>>;
}
interface Vars {
  db: Connection;
  models: { tasks: Model<TaskRecord>; schedules: Model<ScheduledTaskRecord> };
}

/**
 * Tasks with subtasks and dependencies, and the scheduled tasks that create them. Schedule CRUD lives here, with
 * the API, so it works wherever tasks do; the opt-in scheduler service only runs due schedules.
 */
const TasksService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "tasks",
  mixins: [
    EventsMixin({
      records: {
        tasks: function (this: Vars, task: Record<string, unknown>) { return taskModel(this.db).hydrate(task).toJSON(); },
        scheduled_tasks: function (this: Vars, schedule: Record<string, unknown>) { return scheduledTaskModel(this.db).hydrate(schedule).toJSON(); },
      },
      consumer: {
        group: "tasks",
        /**
         * The interface's onboarding task on signup: a background action (the signup answered already), off
         * unless ONBOARDING_TASK_ENABLED=true. The event may come more than once, so a user gets one onboarding
         * task however often it arrives; a failure is retried with the event.
         */
        async handle(this: Vars & Pick<Service, "broker" | "settings">, event: ChangeEvent) {
          if (event.type !== USER_REGISTERED || !configOf(this).onboardingTaskEnabled) return;
          const { user_id, email } = event.data as { user_id: number; email: string };
          const account_id = event.account_id;
          // input is free-form, stored encoded (lib/free-json): matched here among the account's few onboarding tasks.
          const onboarding = await this.models.tasks.find({ account_id, task_type: ONBOARDING_TASK_TYPE }, { input: 1 }).lean<Pick<TaskRecord, "input">[]>();
          if (onboarding.some((task) => task.input?.user_id === user_id)) return;
          await this.broker.call("tasks.create", onboardingTask(user_id, email), asAccount(account_id));
        },
      },
    }),
    MongoMixin((db) => ({ tasks: taskModel(db), schedules: scheduledTaskModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    ...crudActions(tasks, {
      actions: ["list", "update"],
      filters: { params: taskFilters, filter: (params) => pickDefined(params, FILTER_KEYS) },
      apply(ctx, task, changes) {
        return this.applyChanges(ctx, task, changes);
      },
    } satisfies CrudHooks<Methods, TaskRecord>),

    /** Creates through createTask, which schedule runs and onboarding use too. */
    create: {
      rest: "POST /tasks",
      summary: "Create a task",
      params: tasks.createParams,
      response: tasks.view.one(201),
      async handler(ctx: Ctx<typeof tasks.types.create>) {
        const task = await this.createTask(ctx, tasks.pick(ctx.params, "create"));
        return respondCreated(ctx, tasks.location(task.id), task);
      },
    },

    /** A task with its relations resolved; writes answer the task alone. */
    get: {
      rest: "GET /tasks/:task_id",
      summary: "Get a task with its parent, team, agent and dependencies",
      params: taskIdParam,
      response: TaskDetail.one(),
      async handler(ctx: Ctx<{ task_id: number }>) {
        return taskDetail(this.db, await this.findTask(ctx, ctx.params.task_id));
      },
    },

    /** Deleting a task unlinks it from its subtasks and dependants, each change with its event (removeTask). */
    remove: {
      rest: "DELETE /tasks/:task_id",
      summary: "Delete a task and its dependencies",
      params: taskIdParam,
      response: NO_CONTENT,
      async handler(ctx: Ctx<{ task_id: number }>) {
        await this.removeTask(ctx, await this.findTask(ctx, ctx.params.task_id));
        return respondNoContent(ctx);
      },
    },

    subtasks: {
      rest: "GET /tasks/:task_id/subtasks",
      summary: "List a task's subtasks",
      params: { ...taskIdParam, ...paginationParams(TASK_PAGE) },
      response: tasks.view.array(),
      async handler(ctx: Ctx<Page & { task_id: number }>) {
        const parent = await this.findTask(ctx, ctx.params.task_id);
        const { skip, limit } = ctx.params;
        // Creation order: subtasks usually are the steps of their parent.
        const { rows } = await this.listOwned(ctx, this.models.tasks, { parent_id: parent._id }, { skip, limit, sort: { _id: 1 } });
        return rows.map((task) => leanToJSON(this.models.tasks, task));
      },
    },

    addDependency: {
      rest: "POST /tasks/:task_id/dependencies/:dependency_id",
      summary: "Make a task depend on another",
      params: dependencyParams,
      response: plainResponse({ message: { type: "string" } }),
      async handler(ctx: Ctx<{ task_id: number; dependency_id: number }>) {
        const task = await this.findTask(ctx, ctx.params.task_id);
        const self = selfReferenceProblem(task._id, ctx.params.dependency_id, "dependency_id", "path");
        if (self) throw ERRORS.validation([self]);
        const dependency = await this.findTask(ctx, ctx.params.dependency_id);
        return { message: await this.linkDependency(ctx, task, dependency) };
      },
    },

    removeDependency: {
      rest: "DELETE /tasks/:task_id/dependencies/:dependency_id",
      summary: "Remove a task's dependency",
      params: dependencyParams,
      response: NO_CONTENT,
      async handler(ctx: Ctx<{ task_id: number; dependency_id: number }>) {
        const task = await this.findTask(ctx, ctx.params.task_id);
        // Idempotent: removing a link that is not there is already done (and changes nothing).
        if (!task.dependency_ids.includes(ctx.params.dependency_id)) return respondNoContent(ctx);
        await this.recordChange(changeOf("task.updated", "tasks", task), async () => {
          const updated = await this.models.tasks.findOneAndUpdate(
            { _id: task._id, account_id: task.account_id },
            { $pull: { dependency_ids: ctx.params.dependency_id } },
            { returnDocument: "after" },
          );
          return (updated ?? task).toJSON();
        });
        return respondNoContent(ctx);
      },
    },

    /** Creates the task of one schedule occurrence, as the schedule's account (called by the scheduler). */
    createScheduled: {
      visibility: "public",
      params: {
        ...taskTemplateProps,
        scheduled_task_id: { type: "number", integer: true, positive: true },
        scheduled_for: { type: "date", convert: true },
      },
      async handler(ctx: Ctx<TaskTemplate & { scheduled_task_id: number; scheduled_for: Date }>) {
        const { scheduled_task_id, scheduled_for } = ctx.params;
        return this.createTask(ctx, { ...pickDefined(ctx.params, TEMPLATE_KEYS), scheduled_task_id, scheduled_for });
      },
    },

    ...crudActions(
      scheduledTasks,
      {
        async creating(ctx, fields) {
          const schedule = { timezone: DEFAULT_TIMEZONE, enabled: true, ...(await this.checkSchedule(ctx, fields)) } as ScheduledTaskRecord;
          return { ...schedule, next_run_at: nextRunAt(schedule, new Date()) };
        },
        async apply(ctx, schedule, changes) {
          schedule.set(await this.checkSchedule(ctx, changes));
          // A new expression, zone or switch starts counting from now; other edits keep the pending occurrence.
          if (schedule.isModified("schedule") || schedule.isModified("timezone") || schedule.isModified("enabled")) {
            schedule.next_run_at = nextRunAt(schedule, new Date());
          }
        },
      } satisfies CrudHooks<Methods, ScheduledTaskRecord>,
      "scheduled",
    ),
  },

  methods: {
    findTask(ctx, id) {
      return this.findOwned(ctx, this.models.tasks, id, "Task");
    },

    async createTask(ctx, fields) {
      await this.checkReferences(ctx, null, fields);
      const status = statusFields(null, fields.status ?? "pending", new Date());
      const id = await nextRecordId(this.db, "tasks");
      return this.recordChange(changeOf("task.created", "tasks", { _id: id, account_id: this.accountOf(ctx) }), async () => {
        return leanToJSON(this.models.tasks, await this.createOwned(ctx, this.models.tasks, { ...fields, ...status, _id: id })) as unknown as TaskView;
      });
    },

    /** Validates a partial update and copies it onto the task; saving is the caller's. */
    async applyChanges(ctx, task, changes) {
      await this.checkReferences(ctx, task, changes);
      if (changes.status !== undefined) {
        await this.checkStatusMove(task, changes.status);
        Object.assign(changes, statusFields(task, changes.status, new Date()));
      }
      task.set(changes);
    },

    /** Team, agent and parent must be records of the account (422); a parent must not close a cycle (409). */
    async checkReferences(ctx, task, fields) {
      const accountId = this.accountOf(ctx);
      const problems: FieldProblem[] = await assigneeProblems(this.db, accountId, fields);
      const parentId = fields.parent_id;
      if (typeof parentId === "number") {
        const self = task && selfReferenceProblem(task._id, parentId, "parent_id");
        if (self) problems.push(self);
        else if (!(await this.models.tasks.exists({ _id: parentId, account_id: accountId }))) {
          problems.push({ field: "parent_id", message: `No task ${parentId} in this account`, type: "reference" });
        }
      }
      if (problems.length) throw ERRORS.validation(problems);
      if (task && typeof parentId === "number" && (await reaches(parentId, task._id, this.neighbours(accountId, "parent_id")))) {
        throw ERRORS.conflict(`Task ${parentId} cannot be the parent of task ${task._id}: it is already one of its subtasks`);
      }
    },

    /** Starting or completing a task needs every dependency completed first (409 listing the others). */
    async checkStatusMove(task, next) {
      if (next === task.status || !task.dependency_ids.length) return;
      const dependencies = await this.models.tasks
        .find({ _id: { $in: task.dependency_ids }, account_id: task.account_id }, { status: 1 })
        .lean<{ _id: number; status: TaskStatus }[]>();
      const unmet = unmetDependencies(task.status, next, dependencies.map((d) => ({ id: d._id, status: d.status })));
      if (unmet.length) {
        throw ERRORS.conflict(`Task ${task._id} cannot become ${next} before its dependencies are completed: ${unmet.join(", ")}`, {
          unmet_dependency_ids: unmet,
        });
      }
    },

    async linkDependency(ctx, task, dependency) {
      if (task.dependency_ids.includes(dependency._id)) return `Task ${task._id} already depends on task ${dependency._id}`;
      if (await reaches(dependency._id, task._id, this.neighbours(task.account_id, "dependency_ids"))) {
        throw ERRORS.conflict(`Task ${task._id} cannot depend on task ${dependency._id}: that would create a dependency cycle`);
      }
      await this.recordChange(changeOf("task.updated", "tasks", task), async () => {
        const updated = await this.models.tasks.findOneAndUpdate(
          { _id: task._id, account_id: task.account_id },
          { $addToSet: { dependency_ids: dependency._id } },
          { returnDocument: "after" },
        );
        return (updated ?? task).toJSON();
      });
      return `Task ${task._id} now depends on task ${dependency._id}`;
    },

    /**
     * Deletes a task and every dependency link to it; its subtasks stay, as top-level tasks. Links go first, so a
     * failure part-way leaves the task in place for a retry rather than links to nothing.
     */
    async removeTask(ctx, task) {
      const scope = { account_id: task.account_id };
      const affected = await this.models.tasks.find({ ...scope, $or: [{ parent_id: task._id }, { dependency_ids: task._id }] }, { _id: 1 }).lean();
      const drafts = [changeOf("task.deleted", "tasks", task), ...affected.map((t) => changeOf("task.updated", "tasks", { ...t, ...scope }))];
      await this.recordChanges(drafts, async () => {
        await this.models.tasks.updateMany({ ...scope, dependency_ids: task._id }, { $pull: { dependency_ids: task._id } });
        await this.models.tasks.updateMany({ ...scope, parent_id: task._id }, { $set: { parent_id: null } });
        await this.models.tasks.deleteOne({ _id: task._id, ...scope });
        const changed = new Map((await this.models.tasks.find({ ...scope, _id: { $in: affected.map((t) => t._id) } })).map((t) => [t._id, t.toJSON()]));
        return [{ id: task._id }, ...affected.map((t) => changed.get(t._id) ?? { id: t._id })];
      });
    },

    /** Parents (or dependencies) of a set of the account's tasks, for cycle checks. */
    neighbours(accountId, field) {
      return async (ids: number[]) => {
        const rows = await this.models.tasks.find({ _id: { $in: ids }, account_id: accountId }, { [field]: 1 }).lean<TaskRecord[]>();
        return rows.flatMap((r) => (field === "parent_id" ? (r.parent_id === null ? [] : [r.parent_id]) : r.dependency_ids));
      };
    },

    /** The given schedule fields, checked: cron, time zone and the template's team and agent (one 422 for all). */
    async checkSchedule(ctx, params) {
      const { fields, problems } = timingFields(params);
      if (params.task_template) problems.push(...(await assigneeProblems(this.db, this.accountOf(ctx), params.task_template, "task_template.")));
      if (problems.length) throw ERRORS.validation(problems);
      return { ...scheduledTasks.pick(params, "update"), ...fields };
    },
  },
};

export default TasksService;
