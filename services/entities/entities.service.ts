import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS } from "../../lib/errors";
import { nextId, nextRecordId } from "../../lib/ids";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { toPage } from "../../lib/pagination";
import { crudActions, defineView, schemaRef, type CrudHooks } from "../../lib/resource";
import { respondCreated } from "../../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeOf, type ChangeEvent } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { agentModel } from "../agents";
import { followAgentName } from "./agent-names";
import { csvStream, EXPORT_FIELDS, exportFilename } from "./csv";
import { sessionExcerpt, VISIBLE_ROLES } from "./excerpt";
import { entityModel, sessionMessageModel } from "./model";
import {
  deleteManyParams,
  entities,
  filterParams,
  internalRecordFields,
  restListParams,
  sessionMessagesParams,
  statsParams,
  toolListParams,
} from "./params";
import { entityDetailRead, entityRead, type EntityDetailView } from "./render";
import {
  buildEntityFilter,
  citedMessageIds,
  deletionPreview,
  facetsRead,
  statsByAgentRead,
  statsRead,
  templateKey,
  verifyProvenance,
  type CountCell,
  type FacetCell,
  type EntityFilters,
  type ResolvedFilters,
} from "./rules";
import { ENTITY_STATUSES, type EntityRecord, type MessageRole, type Provenance, type SessionMessageRecord } from "./types";

/**
 * Groups of a count read per round trip: one for an account's every agent. At the driver's default (101), 1,000
 * groups took ten round trips, which cost more than the count (14 ms of the platform's CPU instead of 5).
 */
const COUNT_BATCH_SIZE = 10_000;
/** Rows read from the database per round trip while exporting. */
const EXPORT_BATCH_SIZE = 500;

type ListParams = EntityFilters & { skip: number; limit: number; include_facets: boolean };
/** A group of countGroups: the values of its keys (template_id null when absent) and its record count. */
type CountedGroup = { template_id: number | null; count: number };
type StatsParams = { agent_id?: number; days?: number; group_by_agent: boolean };
type RecordParams = typeof entities.types.create;

const int = { type: "number", integer: true } as const;
const statusCounts = { type: "object", props: Object.fromEntries(ENTITY_STATUSES.map((s) => [s, int])) } as const;
const typeCounts = { type: "array", items: { type: "object", props: { template_id: { ...int, nullable: true }, template_name: { type: "string" }, count: int } } } as const;
/** A record as lists show it: the detail without provenance and excerpt. */
const Entity = defineView(
  "Entity",
  Object.fromEntries(Object.entries(entities.view.fields).filter(([key]) => key !== "provenance" && key !== "session_excerpt")),
);
const Facets = defineView("EntityFacets", { entity_types: { read: typeCounts }, statuses: { read: statusCounts } });
const Stats = defineView("EntityStats", {
  total: { read: int },
  status_counts: { read: statusCounts },
  type_counts: { read: typeCounts },
  agent_counts: { read: { type: "array", items: { type: "object", props: { agent_id: int, agent_name: { type: "string" }, count: int } } } },
  period_days: { read: { ...int, nullable: true } },
});
const StatsByAgent = defineView("EntityStatsByAgent", {
  agents: {
    read: {
      type: "array",
      items: { type: "object", props: { agent_id: int, agent_name: { type: "string" }, status_counts: statusCounts, type_counts: typeCounts, total: int } },
    },
  },
  total: { read: int },
  period_days: { read: { ...int, nullable: true } },
});

interface Methods extends TenancyMethods, EventsMethods {
  resolveFilters(ctx: Ctx<unknown>, filters: EntityFilters): Promise<ResolvedFilters>;
  listEntities(ctx: Ctx<unknown>, params: ListParams): Promise<{ data: object[]; total: number; facets?: object }>;
  countCells(filter: Record<string, unknown>): Promise<CountCell[]>;
  countGroups<T extends CountedGroup>(filter: Record<string, unknown>, keys: Record<Exclude<keyof T, "count">, string>): Promise<T[]>;
  facets(resolved: ResolvedFilters): Promise<ReturnType<typeof facetsRead>>;
  agentNames(accountId: number, agentIds: number[]): Promise<Map<number, string>>;
  recordEntity(ctx: Ctx<unknown>, params: RecordParams, createdAt?: Date): Promise<EntityDetailView>;
  checkedProvenance(accountId: number, sessionId: string | null, provenance: Provenance): Promise<Provenance>;
  detail(entity: EntityRecord): Promise<EntityDetailView>;
}
interface Vars {
  db: Connection;
  models: { entities: Model<EntityRecord>; messages: Model<SessionMessageRecord> };
}

/**
 * Collected data: records agents extract from conversations, the session messages their detail quotes,
 * filtered lists, facets, statistics and a CSV export. The MCP service and the agent runtime call the
 * internal actions (no REST route) and get/stats; REST and internal lists share one filter builder.
 */
const EntitiesService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "entities",
  mixins: [
    EventsMixin({
      records: { entities: function (this: Methods, entity: Record<string, unknown>) { return this.detail(entity as unknown as EntityRecord); } },
      consumer: {
        group: "entities",
        /** A renamed agent's records show and match its new name (a deleted agent's keep the name they copied). */
        async handle(this: Vars, event: ChangeEvent) {
          const agent = await agentModel(this.db).findOne({ _id: event.data.id as number, account_id: event.account_id }, { name: 1 }).lean();
          if (agent) await followAgentName(this.models.entities, event.account_id, agent._id, agent.name);
        },
      },
    }),
    MongoMixin((db) => ({ entities: entityModel(db), messages: sessionMessageModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    /** REST list: the interface's paginated shape, facets on request. */
    find: {
      rest: "GET /entities",
      summary: "List collected data records, filtered, with optional facets",
      params: restListParams,
      response: { ...Entity.page({ facets: schemaRef(Facets.name) }), schemas: { ...Entity.page().schemas, ...Facets.schemas } },
      async handler(ctx: Ctx<ListParams>) {
        const { data, total, facets } = await this.listEntities(ctx, ctx.params);
        return { ...toPage(data, total, ctx.params.skip, ctx.params.limit), ...(facets ? { facets } : {}) };
      },
    },

    facetCounts: {
      rest: "GET /entities/facets",
      summary: "Count collected data records by type and by status",
      params: filterParams,
      response: Facets.one(),
      async handler(ctx: Ctx<EntityFilters>) {
        return this.facets(await this.resolveFilters(ctx, ctx.params));
      },
    },

    /** StatsRead, or StatsByAgentRead with group_by_agent; REST and svc_collected_data stats alike. */
    stats: {
      rest: "GET /entities/stats",
      summary: "Statistics of collected data records, overall or per agent",
      params: statsParams,
      response: { status: 200, body: { anyOf: [schemaRef(Stats.name), schemaRef(StatsByAgent.name)] }, schemas: { ...Stats.schemas, ...StatsByAgent.schemas } },
      async handler(ctx: Ctx<StatsParams>) {
        const { agent_id, days, group_by_agent } = ctx.params;
        const resolved = await this.resolveFilters(ctx, { agent_id, days });
        const cells = await this.countCells(buildEntityFilter(resolved));
        const names = await this.agentNames(resolved.accountId, [...new Set(cells.map((c) => c.agent_id))]);
        return (group_by_agent ? statsByAgentRead : statsRead)(cells, names, days ?? null);
      },
    },

    export: {
      rest: "GET /entities/export",
      summary: "Export the matching collected data records as CSV",
      params: filterParams,
      response: { status: 200, body: "csv" },
      async handler(ctx: Ctx<EntityFilters>) {
        const filter = buildEntityFilter(await this.resolveFilters(ctx, ctx.params));
        const keys = ((await this.models.entities.distinct("attribute_keys", filter)) as string[]).sort();
        const rows = this.models.entities
          .find(filter, EXPORT_FIELDS.join(" "))
          .sort({ created_at: -1, _id: -1 })
          .lean<EntityRecord>()
          .cursor({ batchSize: EXPORT_BATCH_SIZE });
        ctx.meta.$responseType = "text/csv; charset=utf-8";
        ctx.meta.$responseHeaders = { "Content-Disposition": `attachment; filename="${exportFilename(new Date())}"` };
        return csvStream(keys, rows);
      },
    },

    ...crudActions(entities, {
      actions: ["get", "update", "remove"],
      apply(_ctx, entity, changes) {
        entity.set(changes);
        if (changes.attributes) entity.markModified("attributes");
      },
      render(_ctx, docs) {
        return Promise.all(docs.map((entity) => this.detail(entity)));
      },
    } satisfies CrudHooks<Methods, EntityRecord>),

    /** Recording checks the agent and the provenance (recordEntity); the standard create cannot. */
    create: {
      rest: "POST /entities",
      summary: "Create a collected data record",
      params: entities.createParams,
      response: entities.view.one(201),
      async handler(ctx: Ctx<RecordParams>) {
        const view = await this.recordEntity(ctx, ctx.params);
        return respondCreated(ctx, entities.location(view.id), view);
      },
    },

    /** The agent runtime's way in: like POST /entities, and it may date the record (imports of history). */
    record: {
      visibility: "public",
      params: internalRecordFields,
      handler(ctx: Ctx<RecordParams & { created_at?: Date }>) {
        return this.recordEntity(ctx, ctx.params, ctx.params.created_at);
      },
    },

    /** Stores turns of a chat session, in the order given; ids increase with that order. */
    recordSessionMessages: {
      visibility: "public",
      params: sessionMessagesParams,
      async handler(ctx: Ctx<{ session_id: string; messages: { role: MessageRole; text: string; created_at?: Date }[] }>) {
        const account_id = this.accountOf(ctx);
        const { session_id } = ctx.params;
        const docs = [];
        for (const { role, text, created_at } of ctx.params.messages) {
          docs.push({ _id: await nextId(this.db, this.models.messages.collection.collectionName), account_id, session_id, role, text, created_at });
        }
        const stored = await this.models.messages.insertMany(docs);
        return stored.map((m) => ({ id: m._id, session_id: m.session_id, role: m.role, text: m.text, created_at: m.created_at }));
      },
    },

    /** A session was deleted: its messages go (records keep their quotes; cited ids then dangle by design). */
    deleteSession: {
      visibility: "public",
      params: { session_id: sessionMessagesParams.session_id },
      async handler(ctx: Ctx<{ session_id: string }>) {
        const { deletedCount } = await this.models.messages.deleteMany({ account_id: this.accountOf(ctx), session_id: ctx.params.session_id });
        return { deleted: deletedCount };
      },
    },

    /** svc_collected_data list: limit defaults to 10; facets only when asked for. */
    list: {
      visibility: "public",
      params: toolListParams,
      async handler(ctx: Ctx<ListParams>) {
        const { skip, limit } = ctx.params;
        const { data, total, facets } = await this.listEntities(ctx, ctx.params);
        return { data, pagination: { total, skip, limit }, ...(facets ? { facets } : {}) };
      },
    },

    /** svc_collected_data_delete: a preview unless confirmed; other accounts' ids are skipped silently. */
    deleteMany: {
      visibility: "public",
      params: deleteManyParams,
      async handler(ctx: Ctx<{ entity_ids: number[]; confirmed: boolean }>) {
        const accountId = this.accountOf(ctx);
        const own = await this.models.entities.find({ _id: { $in: [...new Set(ctx.params.entity_ids)] }, account_id: accountId }, { _id: 1 }).lean();
        if (!ctx.params.confirmed) return deletionPreview(own.length);
        const ids = own.map((r) => r._id);
        const drafts = ids.map((id) => changeOf("entity.deleted", "entities", { _id: id, account_id: accountId }));
        let deleted = 0;
        await this.recordChanges(drafts, async () => {
          deleted = (await this.models.entities.deleteMany({ _id: { $in: ids }, account_id: accountId })).deletedCount;
          return ids.map((id) => ({ id }));
        });
        return { deleted };
      },
    },

    /** How many records an agent of the caller's account has (the agents service asks before a delete). */
    countForAgent: {
      visibility: "public",
      params: { agentId: "number" },
      handler(ctx: Ctx<{ agentId: number }>) {
        return this.models.entities.countDocuments({ account_id: this.accountOf(ctx), agent_id: ctx.params.agentId });
      },
    },

    /** Deletes an agent's records (DELETE /agents/{id}?force=true); the agent.deleted event stands for them. */
    deleteForAgent: {
      visibility: "public",
      params: { agentId: "number" },
      async handler(ctx: Ctx<{ agentId: number }>) {
        const { deletedCount } = await this.models.entities.deleteMany({ account_id: this.accountOf(ctx), agent_id: ctx.params.agentId });
        return deletedCount;
      },
    },
  },

  methods: {
    /**
     * Settles the account and the template filter: template_name matches a data type of the account's
     * records, ignoring case; when none matches, no template filter applies (as svc_collected_data specifies).
     */
    async resolveFilters(ctx, filters) {
      const accountId = this.accountOf(ctx);
      const key = templateKey(filters.template_name);
      const known = key ? await this.models.entities.exists({ account_id: accountId, entity_type_key: key }) : null;
      return { accountId, filters, templateKey: known ? key : null, now: new Date() };
    },

    async listEntities(ctx, params) {
      const resolved = await this.resolveFilters(ctx, params);
      const filter = buildEntityFilter(resolved);
      const [rows, total, facets] = await Promise.all([
        this.models.entities.find(filter).sort({ created_at: -1, _id: -1 }).skip(params.skip).limit(params.limit).lean<EntityRecord[]>(),
        this.models.entities.countDocuments(filter),
        params.include_facets ? this.facets(resolved) : undefined,
      ]);
      return { data: rows.map(entityRead), total, facets };
    },

    async countCells(filter) {
      return this.countGroups<CountCell>(filter, { agent_id: "$agent_id", status: "$status", template_id: "$template_id", template_name: "$entity_type_name" });
    },

    /**
     * One count for both facets, grouped by status and template only: its few groups cost the database a fraction
     * of two counts per agent (on the embedded store, 16 ms instead of 2 x 38 ms for 1,000 records of 1,000 agents).
     */
    async facets(resolved) {
      const keys = { status: "$status", template_key: "$entity_type_key", template_id: "$template_id", template_name: "$entity_type_name" };
      return facetsRead(await this.countGroups<FacetCell>(buildEntityFilter(resolved, { template: true, status: true }), keys), resolved);
    },

    /** Record counts under a filter, per distinct combination of `keys` (one $group, which the database supports). */
    async countGroups<T extends CountedGroup>(filter: Record<string, unknown>, keys: Record<Exclude<keyof T, "count">, string>) {
      const groups = await this.models.entities
        .aggregate<{ _id: Omit<T, "count">; count: number }>([{ $match: filter }, { $group: { _id: keys, count: { $sum: 1 } } }])
        .option({ batchSize: COUNT_BATCH_SIZE });
      return groups.map(({ _id, count }) => ({ ..._id, template_id: _id.template_id ?? null, count }) as T);
    },

    /** Agents' current names; for an agent that no longer exists, the name its latest record copied. */
    async agentNames(accountId, agentIds) {
      const agents = await agentModel(this.db).find({ _id: { $in: agentIds }, account_id: accountId }, { name: 1 }).batchSize(agentIds.length + 1).lean();
      const names = new Map<number, string>(agents.map((a) => [a._id, a.name]));
      for (const id of agentIds.filter((agentId: number) => !names.has(agentId))) {
        const latest = await this.models.entities.findOne({ account_id: accountId, agent_id: id }, { agent_name: 1 }).sort({ created_at: -1, _id: -1 }).lean();
        names.set(id, latest?.agent_name ?? "");
      }
      return names;
    },

    /** Creates a record for an agent of the caller's account; provenance message ids are checked against its session. */
    async recordEntity(ctx, params, createdAt) {
      const accountId = this.accountOf(ctx);
      const agent = await agentModel(this.db).findOne({ _id: params.agent_id, account_id: accountId }, { name: 1 }).lean();
      if (!agent) throw ERRORS.validation([{ field: "agent_id", message: `No agent ${params.agent_id} in this account`, type: "reference" }]);
      // An empty provenance cites nothing: the record is provenance-free, which the interface shows as null.
      const provenance = params.provenance && Object.keys(params.provenance).length ? await this.checkedProvenance(accountId, params.session_id ?? null, params.provenance) : null;
      const fields = { ...entities.pick(params, "create"), provenance, agent_name: agent.name, ...(createdAt ? { created_at: createdAt } : {}) };
      const id = await nextRecordId(this.db, "entities");
      return this.recordChange(changeOf("entity.created", "entities", { _id: id, account_id: accountId }), async () => {
        return this.detail(await this.createOwned(ctx, this.models.entities, { ...fields, _id: id }));
      });
    },

    /** Provenance whose message ids are kept only when they are messages of the record's session in this account. */
    async checkedProvenance(accountId, sessionId, provenance) {
      const cited = citedMessageIds(provenance);
      const found = sessionId && cited.length
        ? await this.models.messages.find({ _id: { $in: cited }, account_id: accountId, session_id: sessionId }, { _id: 1 }).lean()
        : [];
      return verifyProvenance(provenance, new Set(found.map((m) => m._id)));
    },

    /** The detail view: the record with its provenance and the session excerpt built from the stored messages. */
    async detail(entity) {
      const messages = entity.session_id
        ? await this.models.messages
            .find({ account_id: entity.account_id, session_id: entity.session_id, role: { $in: [...VISIBLE_ROLES] } })
            .lean<SessionMessageRecord[]>()
        : [];
      return entityDetailRead(entity, sessionExcerpt(messages, entity.provenance, entity.created_at));
    },
  },
};

export default EntitiesService;
