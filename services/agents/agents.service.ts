import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS, type FieldProblem } from "../../lib/errors";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { paginationParams, toPage } from "../../lib/pagination";
import { crudActions, defineView, viewRule, type CrudHooks, type Resource } from "../../lib/resource";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeCounts, changeOf } from "../../lib/events";
import { CountedCache } from "../../lib/counted-cache";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { ownerWriteActions } from "../../lib/owner-writes";
import { traits } from "../traits";
import { tools } from "../tools";
import { AGENT_ACCESS_LEVELS, agentModel, type AgentRecord } from "./model";
import { resolveRefs, type AssociationKind } from "./associations";
import { agents, type AgentParams } from "./resource";
import { renderAgents, type ReferenceCache } from "./render";
import { accountAgents, putAgent } from "./store";
import { DEFAULT_TEMPERATURE, directoryItem, mergeConfiguration } from "./rules";
import { escapeRegex } from "../../lib/regex";
import { configOf } from "../../lib/config";

const agentRefParam = agents.idParams;
/** What a directory entry is made of (pages hold up to 1,000 agents: the rest of each record is not read). */
const DIRECTORY_FIELDS = ["name", "identifier", "image_url", "access_level", "configuration", "publication"] as const;
/**
 * Reads kept per account under its counts of changes (lib/counted-cache; trusted for CACHE_TTL_SECONDS at most, 0
 * turns them off). Directory pages: pickers load the directory far more often than agents change, and a page reads
 * up to 1,000 records. List totals, and the traits and tools agents refer to: without them a list page took three
 * queries in two rounds instead of one round of two.
 */
const CACHE_SIZES = {
  directory: { accounts: 1_000, entriesPerAccount: 20 },
  totals: { accounts: 1_000, entriesPerAccount: 20 },
  references: { accounts: 1_000, entriesPerAccount: 500 },
};
/** The built-in tool that lets an agent search every knowledge source of its account. */
const KNOWLEDGE_RETRIEVAL_TOOL = {
  identifier: "knowledge-retrieval",
  name: "Knowledge retrieval",
  tool_type: "function",
  description: "Searches all knowledge sources of the account",
  configuration: { scope: "account" },
};

/** An agent as the chat directory lists it (rules.ts directoryItem). */
const DirectoryItem = defineView("AgentDirectoryItem", {
  id: { read: { type: "number", integer: true } },
  name: { read: { type: "string" } },
  uri: { read: { type: "string" } },
  avatar: { read: { type: "string", nullable: true } },
  access: { read: { type: "enum", values: AGENT_ACCESS_LEVELS } },
  accent: { read: { type: "string", nullable: true } },
});
const KnowledgeRetrievalAttached = defineView("KnowledgeRetrievalAttached", {
  message: { read: { type: "string" } },
  agent_id: { read: { type: "number", integer: true } },
  tool: { read: viewRule(tools.view) },
});

type AgentDoc = HydratedDocument<AgentRecord>;

interface Methods extends TenancyMethods, EventsMethods {
  findAgent(ctx: Ctx<unknown>, ref: string): Promise<AgentDoc>;
  render(ctx: Ctx<unknown>, agent: AgentRecord): Promise<object>;
  associated(ctx: Ctx<{ agent_id_or_identifier: string }>, resource: Resource, field: "trait_ids" | "tool_ids"): Promise<object[]>;
  applyFields(ctx: Ctx<unknown>, agent: AgentDoc, params: AgentParams): Promise<void>;
  collectedDataCount(ctx: Ctx<unknown>, agentId: number): Promise<number>;
}
interface Vars {
  db: Connection;
  models: { agents: Model<AgentRecord> };
  settings: { rest: string };
  caches: { directory: CountedCache<object>; totals: CountedCache<number>; references: ReferenceCache["entries"] } | null;
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
    ...crudActions(agents, {
      draft(fields) {
        return { name: fields.name, model: configOf(this).defaultModel, temperature: DEFAULT_TEMPERATURE };
      },
      apply(ctx, agent, fields) {
        return this.applyFields(ctx, agent, fields);
      },
      render(ctx, docs) {
        return renderAgents(this.db, this.accountOf(ctx), docs);
      },
      async list(ctx, filter, opts) {
        const accountId = this.accountOf(ctx);
        const caches = this.caches;
        if (!caches) {
          const { rows, total } = await this.listOwned(ctx, this.models.agents, filter, opts);
          return { data: await renderAgents(this.db, accountId, rows), total };
        }
        // The counts are read with the page; what they find cached spares the count and the reference queries.
        const counts = changeCounts(this.db, accountId, ["agents", "traits", "tools"]);
        const key = JSON.stringify(filter);
        const knownTotal = counts.then(([agentChanges]) => caches.totals.get(accountId, agentChanges, key));
        const { rows, total } = await this.listOwned(ctx, this.models.agents, filter, { ...opts, knownTotal });
        const [agentChanges, traitChanges, toolChanges] = await counts;
        caches.totals.set(accountId, agentChanges, key, total);
        return { data: await renderAgents(this.db, accountId, rows, { entries: caches.references, count: traitChanges + toolChanges }), total };
      },
      removeParams: { force: { type: "boolean", convert: true, default: false, optional: true, description: "Also delete the agent's collected data (409 otherwise when it has any)" } },
      async removing(ctx, agent) {
        const collected = await this.collectedDataCount(ctx, agent._id);
        if (collected > 0 && !ctx.params.force) {
          throw ERRORS.conflict(`Agent has ${collected} collected data records; retry with force=true to delete them too`, {
            collected_count: collected,
          });
        }
        if (collected > 0) await ctx.call("entities.deleteForAgent", { agentId: agent._id });
      },
    } satisfies CrudHooks<Methods & Vars, AgentRecord>),
    /** Agents written for another service's change (team push), in this service's unit of work (lib/owner-writes.ts). */
    ...ownerWriteActions({ model: agentModel, read: accountAgents, put: putAgent }),

    directory: {
      rest: "GET /agents/directory",
      summary: "List agents as lean directory items (for pickers), alphabetically",
      params: { ...paginationParams({ max: 1000, def: 200 }), search: { type: "string", max: 100, optional: true, description: "Text matched in names and identifiers" } },
      response: DirectoryItem.page(),
      async handler(ctx: Ctx<{ skip: number; limit: number; search?: string }>) {
        const { skip, limit } = ctx.params;
        const search = ctx.params.search?.trim().toLowerCase() ?? "";
        const accountId = this.accountOf(ctx);
        const pages = this.caches?.directory;
        const [changes] = pages ? await changeCounts(this.db, accountId, ["agents"]) : [0];
        const key = JSON.stringify([skip, limit, search]);
        const cached = pages?.get(accountId, changes, key);
        if (cached) return cached;
        const filter = search ? { sort_name: { $regex: escapeRegex(search) } } : {};
        const { rows, total } = await this.listOwned(ctx, this.models.agents, filter, { skip, limit, sort: { sort_name: 1, _id: 1 }, select: DIRECTORY_FIELDS });
        const page = toPage(rows.map(directoryItem), total, skip, limit);
        pages?.set(accountId, changes, key, page);
        return page;
      },
    },

    setTraits: {
      rest: "PUT /agents/:agent_id_or_identifier/traits",
      summary: "Replace an agent's traits",
      params: { ...agentRefParam, trait_ids: { type: "array", max: 100, items: { type: "number", integer: true, positive: true } } },
      response: agents.view.one(),
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
      summary: "List an agent's traits",
      params: agentRefParam,
      response: traits.view.array(),
      handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        return this.associated(ctx, traits, "trait_ids");
      },
    },

    tools: {
      rest: "GET /agents/:agent_id_or_identifier/tools",
      summary: "List an agent's tools",
      params: agentRefParam,
      response: tools.view.array(),
      handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        return this.associated(ctx, tools, "tool_ids");
      },
    },

    attachKnowledgeRetrieval: {
      rest: "POST /agents/:agent_id_or_identifier/tools/knowledge-retrieval",
      summary: "Attach the knowledge-retrieval tool to an agent",
      params: agentRefParam,
      response: KnowledgeRetrievalAttached.one(),
      async handler(ctx: Ctx<{ agent_id_or_identifier: string }>) {
        const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
        const tool = await ctx.call<{ id: number }, typeof KNOWLEDGE_RETRIEVAL_TOOL>("tools.ensure", KNOWLEDGE_RETRIEVAL_TOOL);
        // Attached already: nothing changes, so nothing is written or announced (updated_at stays).
        if (!agent.tool_ids.includes(tool.id)) {
          await this.recordChange(changeOf("agent.updated", "agents", agent), async () => {
            // $addToSet keeps the attach idempotent under concurrent calls.
            await this.models.agents.updateOne({ _id: agent._id, account_id: agent.account_id }, { $addToSet: { tool_ids: tool.id } });
            return this.render(ctx, await this.findAgent(ctx, String(agent._id)));
          });
        }
        return { message: "Knowledge retrieval tool attached", agent_id: agent._id, tool };
      },
    },
  },

  methods: {
    findAgent(ctx, ref) {
      return this.findOwnedByRef(ctx, this.models.agents, ref, "Agent");
    },

    /** The agent's traits or tools as their own routes show them, in the agent's order (deleted ones skipped). */
    async associated(ctx: Ctx<{ agent_id_or_identifier: string }>, resource: Resource, field: "trait_ids" | "tool_ids") {
      const agent = await this.findAgent(ctx, ctx.params.agent_id_or_identifier);
      const ids: number[] = agent[field];
      const records: HydratedDocument<{ _id: number }>[] = await resource.model(this.db).find({ _id: { $in: ids }, account_id: agent.account_id });
      const order = new Map(ids.map((id, i) => [id, i]));
      return records.sort((a, b) => order.get(a._id)! - order.get(b._id)!).map((r) => r.toJSON());
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
      if (params.access_level !== undefined) {
        agent.access_level = params.access_level;
        // A published agent's publication names its level too (the directory shows that one, and push keeps it):
        // one level, whichever route set it. REST set only the agent's, and the two disagreed.
        if (agent.publication && agent.publication.access_level !== params.access_level) {
          agent.publication = { ...agent.publication, access_level: params.access_level };
        }
      }
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

  created() {
    const { cacheTtlSeconds } = configOf(this);
    const cache = <T>(sizes: { accounts: number; entriesPerAccount: number }) => new CountedCache<T>({ ...sizes, ttlMs: cacheTtlSeconds * 1000 });
    this.caches = cacheTtlSeconds > 0
      ? { directory: cache(CACHE_SIZES.directory), totals: cache(CACHE_SIZES.totals), references: cache(CACHE_SIZES.references) }
      : null;
  },
};

export default AgentsService;
