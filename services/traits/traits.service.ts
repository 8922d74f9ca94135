import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { crudActions, defineView, eventRecords } from "../../lib/resource";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { ownerWriteActions } from "../../lib/owner-writes";
import { traitModel, type TraitRecord } from "./model";
import { traits } from "./resource";
import { normalizeTags, traitCategories } from "./rules";
import { accountTraits, putTrait } from "./store";

const TraitCategory = defineView("TraitCategory", {
  name: { read: { type: "string" } },
  description: { read: { type: "string", nullable: true } },
  trait_count: { read: { type: "number", integer: true } },
});

/** Tags are stored normalised, whoever writes them. */
const withNormalTags = (fields: Record<string, unknown>) => (fields.tags ? { ...fields, tags: normalizeTags(fields.tags as string[]) } : fields);

/** Traits (services/traits/resource.ts) and the categories they are filed under. */
const TraitsService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, { db: Connection; models: { traits: Model<TraitRecord> } }> = {
  name: "traits",
  mixins: [EventsMixin({ records: eventRecords(traits) }), MongoMixin((db) => ({ traits: traitModel(db) })), TenancyMixin],
  settings: { rest: "/" },

  actions: {
    ...crudActions(traits, { creating: (_ctx, fields) => withNormalTags(fields), updating: (_ctx, _doc, changes) => withNormalTags(changes) }),
    /** Traits written for another service's change (team push), in this service's unit of work (lib/owner-writes.ts). */
    ...ownerWriteActions({ model: traitModel, read: accountTraits, put: putTrait }),

    categories: {
      rest: "GET /traits/categories",
      summary: "List trait categories",
      response: TraitCategory.array(),
      async handler(ctx: Ctx) {
        const counts = await this.models.traits.aggregate<{ _id: string; count: number }>([
          { $match: { account_id: this.accountOf(ctx) } },
          { $group: { _id: "$category", count: { $sum: 1 } } },
        ]);
        return traitCategories(counts);
      },
    },
  },
};

export default TraitsService;
