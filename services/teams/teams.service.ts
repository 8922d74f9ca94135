import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS, type FieldProblem } from "../../lib/errors";
import { isIdRef } from "../../lib/ids";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { crudActions, ruleBody, ruleResponse, type CrudHooks } from "../../lib/resource";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeOf, type ChangeEvent } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { OwnerWrites, type ActionCall } from "../../lib/owner-writes";
import { hashPassword, verifyPassword } from "../../lib/auth/passwords";
import { attemptKeys, failureCounterModel, FailureThrottle } from "../../lib/auth/throttle";
import { passwordHashing } from "../../lib/auth/hashing-queue";
import { credentialsRefused } from "../../lib/auth/identity";
import { configOf } from "../../lib/config";
import { accountAgents, renderAgents } from "../agents";
import { teamModel, type TeamAccessLevel, type TeamRecord } from "./model";
import { teams } from "./resource";
import { documentSchema, pushDocumentSchema } from "./config-schema";
import { pullDocument, pushDocument } from "./push";
import { passwordProblem, readDecision } from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";

const pullParam = { identifier: { type: "string", min: 1, max: 100, description: "The team's identifier (or id)" } } as const;

type TeamParams = typeof teams.types.update;
type TeamDoc = HydratedDocument<TeamRecord>;

interface Methods extends TenancyMethods, EventsMethods {
  render(team: TeamRecord): Promise<object>;
  applyTeamFields(ctx: Ctx<unknown>, team: TeamDoc, params: TeamParams): Promise<void>;
  readableTeam(ctx: Ctx<unknown>, ref: string): Promise<TeamRecord>;
}
interface Vars {
  db: Connection;
  models: { teams: Model<TeamRecord>; failures: ReturnType<typeof failureCounterModel> };
  throttle: FailureThrottle;
}

/** Teams of agents, their access levels, and configuration push/pull. */
const TeamsService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "teams",
  mixins: [
    EventsMixin({
      // Push writes agents, tools and traits through their owners, who commit (and settle) those events.
      records: {
        teams: function (this: Methods, team) { return this.render(team as unknown as TeamRecord); },
      },
      consumer: {
        group: "teams",
        /**
         * A deleted agent leaves every team of its account, each change with its team.updated event (a team's
         * agent_ids is its own field; a replay finds no team to change).
         */
        async handle(this: Vars & Methods, event: ChangeEvent) {
          const agentId = event.data.id as number;
          const scope = { account_id: event.account_id };
          const affected = await this.models.teams.find({ ...scope, agent_ids: agentId }, { _id: 1 }).lean<Pick<TeamRecord, "_id">[]>();
          if (!affected.length) return;
          const ids = affected.map((t) => t._id);
          await this.recordChanges(ids.map((_id) => changeOf("team.updated", "teams", { _id, ...scope })), async () => {
            await this.models.teams.updateMany({ ...scope, _id: { $in: ids } }, { $pull: { agent_ids: agentId } });
            const changed = await this.models.teams.find({ ...scope, _id: { $in: ids } }).lean<TeamRecord[]>();
            return Promise.all(ids.map((id) => {
              const team = changed.find((t) => t._id === id);
              return team ? this.render(team) : { id };
            }));
          });
        },
      },
    }),
    MongoMixin((db) => ({ teams: teamModel(db), failures: failureCounterModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    ...crudActions(teams, {
      actions: ["list", "create", "update", "remove"],
      draft: (fields) => ({ name: fields.name }),
      apply(ctx, team, fields) {
        return this.applyTeamFields(ctx, team, fields);
      },
      render(_ctx, docs) {
        return Promise.all(docs.map((team) => this.render(team)));
      },
    } satisfies CrudHooks<Methods & Vars, TeamRecord>),

    /** Push: create or update a whole team from a configuration document. */
    push: {
      rest: ["POST /teams/config", "POST /teams/push"],
      operationIds: ["pushConfig", "push"],
      summary: "Create or update a whole team from a configuration document (push)",
      // Checked by pushDocument, whose refusals are the interface's 400s: declared as the body, not as params.
      body: ruleBody("TeamConfigurationDocumentInput", pushDocumentSchema),
      response: teams.view.one(),
      async handler(ctx: Ctx<unknown>) {
        if (ctx.meta.authType === "master") throw ERRORS.forbidden("Master API keys cannot push teams; use an account API key or a user token");
        // broker.call with the push as parent: the caller's meta, and no share of the push's own request timeout.
        const call = (action: string, params: object, opts?: { timeout?: number }) => this.broker.call(action, params, { ...opts, parentCtx: ctx });
        const owners = () => new OwnerWrites(call as ActionCall, (message, err) => this.logger.warn(message, err));
        const { team, changes, owners: written } = await pushDocument(this.db, owners, this.accountOf(ctx), ctx.params);
        await written.commit();
        await this.commitRendered(changes);
        return this.render(team);
      },
    },

    pull: {
      rest: ["GET /teams/:identifier/config", "GET /teams/:identifier/pull"],
      operationIds: ["pullConfig", "pull"],
      summary: "Export a team as a configuration document (pull)",
      params: pullParam,
      response: ruleResponse("TeamConfigurationDocument", documentSchema),
      errors: { "500": "The team cannot be expressed as a configuration (e.g. a tool whose type is not mcp, external or function)" },
      async handler(ctx: Ctx<{ identifier: string }>) {
        const team = await this.findOwnedByRef(ctx, this.models.teams, ctx.params.identifier, "Team");
        return pullDocument(this.db, team.toObject());
      },
    },

    /** Reads also serve other accounts' public and password-protected teams (readableTeam). */
    get: {
      rest: "GET /teams/:team_id_or_identifier",
      summary: "Get a team (public teams need no credentials, password-protected ones X-Access-Password)",
      auth: "optional",
      params: teams.idParams,
      response: teams.view.one(),
      async handler(ctx: Ctx<{ team_id_or_identifier: string }>) {
        return this.render(await this.readableTeam(ctx, ctx.params.team_id_or_identifier));
      },
    },
  },

  methods: {
    async render(team: TeamRecord) {
      const agents = await accountAgents(this.db, team.account_id, team.agent_ids);
      const ordered = team.agent_ids.flatMap((id) => agents.filter((a) => a._id === id));
      const doc = team instanceof this.models.teams ? (team as TeamDoc) : this.models.teams.hydrate(team);
      const json = doc.toJSON();
      return { ...json, agent_ids: ordered.map((a) => a._id), agents: await renderAgents(this.db, team.account_id, ordered) };
    },

    /** Validated params onto the record: password rules (400), agent references (422), access level case. */
    async applyTeamFields(ctx: Ctx<unknown>, team: TeamDoc, params: TeamParams) {
      for (const key of ["name", "identifier", "description", "image_url", "configuration"] as const) {
        if (params[key] !== undefined) team.set(key, params[key]);
      }
      const accessLevel = params.access_level ?? team.access_level;
      const password = params.access_password;
      const problem = passwordProblem(accessLevel, password, Boolean(team.access_password_hash));
      if (problem) throw ERRORS.badRequest(problem);
      team.access_level = accessLevel;
      if (accessLevel !== "PASSWORD_PROTECTED") team.access_password_hash = null;
      else if (password !== undefined) team.access_password_hash = await hashPassword(password);
      if (params.agent_ids) {
        const accountId = this.accountOf(ctx);
        const found = await accountAgents(this.db, accountId, params.agent_ids);
        const known = new Set(found.map((a) => a._id));
        const problems: FieldProblem[] = params.agent_ids.flatMap((id, i) =>
          known.has(id) ? [] : [{ field: `agent_ids[${i}]`, message: `No agent ${id} in this account`, type: "reference" }],
        );
        if (problems.length) throw ERRORS.validation(problems);
        team.agent_ids = [...new Set(params.agent_ids)];
      }
    },

    /**
     * The team a caller may read: members of its account always; others only PUBLIC teams, or
     * PASSWORD_PROTECTED ones with the right X-Access-Password. Anonymous lookups by identifier consider
     * only non-private teams (identifiers are unique per account, ids globally).
     */
    async readableTeam(ctx: Ctx<unknown>, ref: string) {
      const accountId = ctx.meta.accountId;
      const shared = { access_level: { $in: ["PUBLIC", "PASSWORD_PROTECTED"] as TeamAccessLevel[] } };
      let team: TeamRecord | null;
      if (isIdRef(ref)) team = await crossAccount("public team read by global id; access is decided next", this.models.teams.findById(Number(ref))).lean<TeamRecord>();
      else {
        team =
          (accountId !== undefined ? await this.models.teams.findOne({ account_id: accountId, identifier: ref }).lean<TeamRecord>() : null) ??
          (await crossAccount("public team read by identifier", this.models.teams.findOne({ identifier: ref, ...shared })).sort({ _id: 1 }).lean<TeamRecord>());
      }
      if (!team) throw ERRORS.notFound("Team", ref);
      const password = ctx.meta.headers?.["x-access-password"];
      switch (readDecision(team, { accountId, passwordGiven: Boolean(password) })) {
        case "allow":
          return team;
        case "needs-credentials":
          throw credentialsRefused("Not authenticated");
        case "needs-password":
          throw ERRORS.unauthorized("This team is password protected: send its password in X-Access-Password");
        case "check-password": {
          const stored = team.access_password_hash;
          const keys = attemptKeys(configOf(this).throttle, `team:${team._id}`, ctx.meta.clientIp);
          const right = await passwordHashing.admit(ctx.meta.clientIp, (slot) =>
            this.throttle.attempt(keys, async () => Boolean(stored) && slot(() => verifyPassword(password!, stored!))),
          );
          if (right) return team;
          throw ERRORS.forbidden("Wrong team password");
        }
        case "forbidden":
          throw ERRORS.forbidden(`Team ${ref} belongs to another account`);
      }
    },
  },

  started() {
    this.throttle = new FailureThrottle(this.models.failures);
  },
};

export default TeamsService;
