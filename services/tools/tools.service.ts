import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { leanToJSON } from "../../lib/db";
import { nextRecordId } from "../../lib/ids";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { crudActions, eventRecords } from "../../lib/resource";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeOf } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { ownerWriteActions } from "../../lib/owner-writes";
import { toolModel, type ToolRecord } from "./model";
import { tools } from "./resource";
import { accountTools, putTool } from "./store";

/** Account tools agents can use (services/tools/resource.ts), and the built-in tools agents ensure. */
const ToolsService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, { db: Connection; models: { tools: Model<ToolRecord> } }> = {
  name: "tools",
  mixins: [EventsMixin({ records: eventRecords(tools) }), MongoMixin((db) => ({ tools: toolModel(db) })), TenancyMixin],
  settings: { rest: "/" },

  actions: {
    ...crudActions(tools),
    /** Tools written for another service's change (team push), in this service's unit of work (lib/owner-writes.ts). */
    ...ownerWriteActions({ model: toolModel, read: accountTools, put: putTool }),

    /** Returns the account's tool with this identifier, creating it first if needed (built-in tools). */
    ensure: {
      visibility: "public",
      params: tools.createParams,
      async handler(ctx: Ctx<typeof tools.types.create>) {
        const scope = { account_id: this.accountOf(ctx), identifier: ctx.params.identifier };
        const existing = await this.models.tools.findOne(scope);
        if (existing) return existing.toJSON();
        try {
          const id = await nextRecordId(this.db, "tools");
          return await this.recordChange(changeOf("tool.created", "tools", { _id: id, account_id: scope.account_id }), async () => {
            const naming = { name: ctx.params.name, identifier: ctx.params.identifier, label: "Tool" };
            return leanToJSON(this.models.tools, await this.createIdentified(ctx, this.models.tools, { ...tools.pick(ctx.params, "create"), _id: id }, naming));
          });
        } catch (err) {
          // A concurrent ensure created it first.
          const created = await this.models.tools.findOne(scope);
          if (created) return created.toJSON();
          throw err;
        }
      },
    },
  },
};

export default ToolsService;
