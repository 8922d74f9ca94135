import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { freeJsonRule } from "../lib/free-json";
import { identifierRule } from "../lib/ids";
import type { Ctx } from "../lib/meta";
import { MongoMixin } from "../lib/mongo.mixin";
import { paginationParams, toPage } from "../lib/pagination";
import { respondCreated, respondNoContent } from "../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../lib/tenancy.mixin";
import { changeOf } from "../lib/events";
import { EventsMixin, type EventsMethods } from "../lib/events.mixin";
import { nextId } from "../lib/ids";
import { toolModel, type ToolRecord } from "./tools/model";

const toolFields = {
  name: { type: "string", min: 1, max: 255, trim: true },
  identifier: { ...identifierRule, optional: false },
  description: { type: "string", max: 10_000, optional: true, nullable: true },
  tool_type: { type: "string", min: 1, max: 50, trim: true, optional: true },
  configuration: freeJsonRule({ type: "object", optional: true }),
} as const;

const idParam = { tool_id: { type: "number", integer: true, positive: true, convert: true } } as const;

/** Keeps only the fields a client may set, so extra body keys never reach the database. */
function pickToolFields(params: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(toolFields)) if (params[key] !== undefined) out[key] = params[key];
  return out;
}

interface Vars {
  db: Connection;
  models: { tools: Model<ToolRecord> };
}

/** Account tools agents can use. Deleting a tool leaves agents' references in place, as the interface specifies. */
const ToolsService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, Vars> = {
  name: "tools",
  mixins: [
    EventsMixin({ records: { tools: function (this: Vars, tool) { return toolModel(this.db).hydrate(tool).toJSON(); } } }),
    MongoMixin((db) => ({ tools: toolModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    list: {
      rest: "GET /tools",
      params: paginationParams({ max: 200, def: 50 }),
      async handler(ctx: Ctx<{ skip: number; limit: number }>) {
        const { skip, limit } = ctx.params;
        const { rows, total } = await this.listOwned(ctx, this.models.tools, {}, { skip, limit, sort: { created_at: -1, _id: -1 } });
        return toPage(rows.map((t) => t.toJSON()), total, skip, limit);
      },
    },

    create: {
      rest: "POST /tools",
      params: toolFields,
      async handler(ctx: Ctx<Record<string, unknown> & { name: string; identifier: string }>) {
        const id = await nextId(this.db, "tools");
        const body = await this.recordChange(changeOf("tool.created", "tools", { _id: id, account_id: this.accountOf(ctx) }), async () => {
          const naming = { name: ctx.params.name, identifier: ctx.params.identifier, label: "Tool" };
          return (await this.createIdentified(ctx, this.models.tools, { ...pickToolFields(ctx.params), _id: id }, naming)).toJSON();
        });
        return respondCreated(ctx, `/api/v1/tools/${id}`, body);
      },
    },

    get: {
      rest: "GET /tools/:tool_id",
      params: idParam,
      async handler(ctx: Ctx<{ tool_id: number }>) {
        return (await this.findOwned(ctx, this.models.tools, ctx.params.tool_id, "Tool")).toJSON();
      },
    },

    update: {
      rest: ["PUT /tools/:tool_id", "PATCH /tools/:tool_id"],
      params: {
        ...idParam,
        ...Object.fromEntries(Object.entries(toolFields).map(([k, rule]) => [k, { ...rule, optional: true }])),
      },
      async handler(ctx: Ctx<{ tool_id: number } & Record<string, unknown>>) {
        const tool = await this.findOwned(ctx, this.models.tools, ctx.params.tool_id, "Tool");
        tool.set(pickToolFields(ctx.params));
        return this.recordChange(changeOf("tool.updated", "tools", tool), async () => {
          await this.saveIdentified(tool, "Tool");
          return tool.toJSON();
        });
      },
    },

    /** Returns the account's tool with this identifier, creating it first if needed (built-in tools). */
    ensure: {
      visibility: "public",
      params: toolFields,
      async handler(ctx: Ctx<Record<string, unknown> & { name: string; identifier: string }>) {
        const scope = { account_id: this.accountOf(ctx), identifier: ctx.params.identifier };
        const existing = await this.models.tools.findOne(scope);
        if (existing) return existing.toJSON();
        try {
          const id = await nextId(this.db, "tools");
          return await this.recordChange(changeOf("tool.created", "tools", { _id: id, account_id: scope.account_id }), async () => {
            const naming = { name: ctx.params.name, identifier: ctx.params.identifier, label: "Tool" };
            return (await this.createIdentified(ctx, this.models.tools, { ...pickToolFields(ctx.params), _id: id }, naming)).toJSON();
          });
        } catch (err) {
          // A concurrent ensure created it first.
          const created = await this.models.tools.findOne(scope);
          if (created) return created.toJSON();
          throw err;
        }
      },
    },

    remove: {
      rest: "DELETE /tools/:tool_id",
      params: idParam,
      async handler(ctx: Ctx<{ tool_id: number }>) {
        const tool = await this.findOwned(ctx, this.models.tools, ctx.params.tool_id, "Tool");
        await this.recordChange(changeOf("tool.deleted", "tools", tool), async () => {
          await this.models.tools.deleteOne({ _id: tool._id, account_id: tool.account_id });
          return { id: tool._id };
        });
        return respondNoContent(ctx);
      },
    },
  },
};

export default ToolsService;
