import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS, type FieldProblem } from "../lib/errors";
import type { Ctx } from "../lib/meta";
import { MongoMixin } from "../lib/mongo.mixin";
import { namedSort, paginationParams, sortParams, toPage } from "../lib/pagination";
import { respondCreated, respondNoContent } from "../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../lib/tenancy.mixin";
import { changeOf } from "../lib/events";
import { EventsMixin, type EventsMethods } from "../lib/events.mixin";
import { nextId } from "../lib/ids";
import { traitModel } from "./traits/model";
import { toolModel } from "./tools/model";
import { agentModel, type AgentRecord } from "./agents/model";
import { resolveRefs, type AssociationKind } from "./agents/associations";
import { agentFields, agentRefParam, agentUpdateFields, type AgentParams } from "./agents/params";
import { renderAgents } from "./agents/render";
import { DEFAULT_MODEL, DEFAULT_TEMPERATURE, directoryItem, escapeRegex, mergeConfiguration, normalizeAccessLevel } from "./agents/rules";

const SORT_FIELDS = ["updated_at", "created_at", "name"] as const;
/** What a directory entry is made of (pages hold up to 1,000 agents: the rest of each record is not read). */
const DIRECTORY_FIELDS = ["name", "identifier", "image_url", "access_level", "configuration", "publication"] as const;
/** The built-in tool that lets an agent search every knowledge source of its account. */
const KNOWLEDGE_RETRIEVAL_TOOL = {
  identifier: "knowledge-retrieval",
  name: "Knowledge retrieval",
  tool_type: "function",
  description: "Searches all knowledge sources of the account",
  configuration: { scope: "account" },
};

type AgentDoc = HydratedDocument<AgentRecord>;

interface Methods extends TenancyMethods, EventsMethods {
  findAgent(ctx: Ctx<unknown>, ref: string): Promise<AgentDoc>;
  render(ctx: Ctx<unknown>, agent: AgentRecord): Promise<object>;
  applyFields(ctx: Ctx<unknown>, agent: AgentDoc, params: AgentParams): Promise<void>;
  collectedDataCount(ctx: Ctx<unknown>, agentId: number): Promise<number>;
}
interface Vars {
  db: Connection;
  models: { agents: Model<AgentRecord> };
}

/** Agents: CRUD by id or identifier, associations, the directory, and the knowledge-retrieval tool. */
const AgentsService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "agents",
  mixins: [
    EventsMixin({ records: { agents: async function (this: Vars, agent) { return (await renderAgents(this.db, agent.account_id as number, [agent as unknown as AgentRecord]))[0]!; } } }),
    MongoMixin((db) => ({ agents: agentModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    list: {
      rest: "GET /agents",
      params: { ...sortParams(SORT_FIELDS), ...paginationParams({ max: 200, def: 50 }) },
      async handler(ctx: Ctx<{ sort_by: string; sort_order: "asc" | "desc"; skip: number; limit: number }>) {
        const { skip, limit, sort_by, sort_order } = ctx.params;
        const { rows, total } = await this.listOwned(ctx, this.models.agents, {}, { skip, limit, sort: namedSort(sort_by, sort_order) });
        return toPage(await renderAgents(this.db, this.accountOf(ctx), rows), total, skip, limit);
      },
    },

    directory: {
      rest: "GET /agents/directory",
      params: { ...paginationParams({ max: 1000, def: 200 }), search: { type: "string", max: 100, optional: true } },
      async handler(ctx: Ctx<{ skip: number; limit: number; search?: string }>) {
        const { skip, limit, search } = ctx.params;
        const filter = search?.trim() ? { sort_name: { $regex: escapeRegex(search.trim().toLowerCase()) } } : {};
        const { rows, total } = await this.listOwned(ctx, this.models.agents, filter, { skip, limit, sort: { sort_name: 1, _id: 1 }, select: DIRECTORY_FIELDS });
        return toPage(rows.map(directoryItem), total, skip, limit);
      },
    },

    create: {
      rest: "POST /agents",
      params: agentFields,
      async handler(ctx: Ctx<AgentParams & { name: string }>) {
        const draft = new this.models.agents({ name: ctx.params.name, model: DEFAULT_MODEL, temperature: DEFAULT_TEMPERATURE });
        await this.applyFields(ctx, draft, ctx.params);
        const { _id, account_id, identifier, created_at, updated_at, ...fields } = draft.toObject();
        const id = await nextId(this.db, "agents");
        const body = await this.recordChange(changeOf("agent.created", "agents", { _id: id, account_id: this.accountOf(ctx) }), async () => {
          const naming = { name: ctx.params.name, identifier: ctx.params.identifier, label: "Agent" };
          return this.render(ctx, await this.createIdentified(ctx, this.models.agents, { ...fields, _id: id }, naming));
        });
        return respondCreated(ctx, `/api/v1/agents/${id}`, body);
      },
    },

    get: {
      rest: "GET /agents/:agent_id_or_identifier",
      params: agentRefParam,
      async handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        return this.render(ctx, await this.findAgent(ctx, ctx.params.agent_id_or_identifier));
      },
    },

    update: {
      rest: ["PUT /agents/:agent_id_or_identifier", "PATCH /agents/:agent_id_or_identifier"],
      params: { ...agentRefParam, ...agentUpdateFields },
      async handler(ctx: Ctx<AgentParams & { agent_id_or_identifier: string }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        await this.applyFields(ctx, agent, ctx.params);
        return this.recordChange(changeOf("agent.updated", "agents", agent), async () => {
          await this.saveIdentified(agent, "Agent");
          return this.render(ctx, agent);
        });
      },
    },

    remove: {
      rest: "DELETE /agents/:agent_id_or_identifier",
      params: { ...agentRefParam, force: { type: "boolean", convert: true, default: false, optional: true } },
      async handler(ctx: Ctx<{ agent_id_or_identifier: string; force: boolean }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const collected = await this.collectedDataCount(ctx, agent._id);
        if (collected > 0 && !ctx.params.force) {
          throw ERRORS.conflict(`Agent has ${collected} collected data records; retry with force=true to delete them too`, {
            collected_count: collected,
          });
        }
        if (collected > 0) await ctx.call("entities.deleteForAgent", { agentId: agent._id });
        await this.recordChange(changeOf("agent.deleted", "agents", agent), async () => {
          await this.models.agents.deleteOne({ _id: agent._id, account_id: agent.account_id });
          return { id: agent._id };
        });
        return respondNoContent(ctx);
      },
    },

    setTraits: {
      rest: "PUT /agents/:agent_id_or_identifier/traits",
      params: { ...agentRefParam, trait_ids: { type: "array", max: 100, items: { type: "number", integer: true, positive: true } } },
      async handler(ctx: Ctx<{ agent_id_or_identifier: string; trait_ids: number[] }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const { ids, problems } = await resolveRefs(this.db, agent.account_id, "traits", ctx.params.trait_ids, "trait_ids");
        if (problems.length) throw ERRORS.validation(problems);
        agent.trait_ids = ids;
        return this.recordChange(changeOf("agent.updated", "agents", agent), async () => {
          await agent.save();
          return this.render(ctx, agent);
        });
      },
    },

    traits: {
      rest: "GET /agents/:agent_id_or_identifier/traits",
      params: agentRefParam,
      async handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const traits = await traitModel(this.db).find({ _id: { $in: agent.trait_ids }, account_id: agent.account_id });
        const order = new Map(agent.trait_ids.map((id, i) => [id, i]));
        return traits.sort((a, b) => order.get(a._id)! - order.get(b._id)!).map((t) => t.toJSON());
      },
    },

    tools: {
      rest: "GET /agents/:agent_id_or_identifier/tools",
      params: agentRefParam,
      async handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const tools = await toolModel(this.db).find({ _id: { $in: agent.tool_ids }, account_id: agent.account_id });
        const order = new Map(agent.tool_ids.map((id, i) => [id, i]));
        return tools.sort((a, b) => order.get(a._id)! - order.get(b._id)!).map((t) => t.toJSON());
      },
    },

    attachKnowledgeRetrieval: {
      rest: "POST /agents/:agent_id_or_identifier/tools/knowledge-retrieval",
      params: agentRefParam,
      async handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const tool = await ctx.call<{ id: number }, typeof KNOWLEDGE_RETRIEVAL_TOOL>("tools.ensure", KNOWLEDGE_RETRIEVAL_TOOL);
        await this.recordChange(changeOf("agent.updated", "agents", agent), async () => {
          // $addToSet keeps the attach idempotent under concurrent calls.
          await this.models.agents.updateOne({ _id: agent._id, account_id: agent.account_id }, { $addToSet: { tool_ids: tool.id } });
          return this.render(ctx, await this.findAgent(ctx, String(agent._id)));
        });
        return { message: "Knowledge retrieval tool attached", agent_id: agent._id, tool };
      },
    },
  },

  methods: {
    findAgent(ctx, ref) {
      return this.findOwnedByRef(ctx, this.models.agents, ref, "Agent");
    },

    async render(ctx, agent) {
      const [view] = await renderAgents(this.db, this.accountOf(ctx), [agent]);
      return view!;
    },

    /** Copies validated params onto the record: associations resolved, configuration deep-merged. */
    async applyFields(ctx, agent, params) {
      const accountId = this.accountOf(ctx);
      for (const key of ["name", "identifier", "description", "instructions", "model", "temperature", "max_tokens", "image_url"] as const) {
        if (params[key] !== undefined) agent.set(key, params[key]);
      }
      if (params.access_level !== undefined) agent.access_level = normalizeAccessLevel(params.access_level);
      if (params.configuration !== undefined) {
        agent.configuration = mergeConfiguration(agent.configuration ?? {}, params.configuration);
        agent.markModified("configuration");
      }
      const kinds: [AssociationKind, "trait_ids" | "tool_ids" | "knowledge_source_ids"][] = [
        ["traits", "trait_ids"],
        ["tools", "tool_ids"],
        ["knowledge_sources", "knowledge_source_ids"],
      ];
      const problems: FieldProblem[] = [];
      for (const [kind, field] of kinds) {
        const refs = params[kind];
        if (refs === undefined) continue;
        const resolved = await resolveRefs(this.db, accountId, kind, refs);
        agent.set(field, resolved.ids);
        problems.push(...resolved.problems);
      }
      if (problems.length) throw ERRORS.validation(problems);
    },

    /** Collected data lives in the entities service; where it is not deployed there is none to protect. */
    async collectedDataCount(ctx, agentId) {
      if (!this.broker.registry.getServiceList({ onlyAvailable: true }).some((s) => s.name === "entities")) return 0;
      return ctx.call("entities.countForAgent", { agentId }) as Promise<number>;
    },
  },
};

export default AgentsService;
