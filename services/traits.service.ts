import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { identifierRule, nextId } from "../lib/ids";
import type { Ctx } from "../lib/meta";
import { MongoMixin } from "../lib/mongo.mixin";
import { namedSort, paginationParams, sortParams, toPage } from "../lib/pagination";
import { respondCreated, respondNoContent } from "../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../lib/tenancy.mixin";
import { changeOf } from "../lib/events";
import { EventsMixin, type EventsMethods } from "../lib/events.mixin";
import { traitModel, type TraitRecord } from "./traits/model";
import { normalizeTags, traitCategories } from "./traits/rules";

const traitFields = {
  name: { type: "string", min: 1, max: 255, trim: true },
  identifier: identifierRule,
  category: { type: "string", min: 1, max: 100, trim: true, lowercase: true, optional: true },
  description: { type: "string", max: 10_000, optional: true, nullable: true },
  tags: { type: "array", items: { type: "string", min: 1, max: 100 }, max: 50, optional: true },
} as const;

const idParam = { trait_id: { type: "number", integer: true, positive: true, convert: true } } as const;
const SORT_FIELDS = ["updated_at", "created_at", "name"] as const;

type TraitParams = { name?: string; identifier?: string; category?: string; description?: string | null; tags?: string[] };

/** The writable fields of a trait from validated params. */
function traitChanges(params: TraitParams) {
  const out: Record<string, unknown> = {};
  for (const key of ["name", "identifier", "category", "description"] as const) if (params[key] !== undefined) out[key] = params[key];
  if (params.tags) out.tags = normalizeTags(params.tags);
  return out;
}

interface Vars {
  db: Connection;
  models: { traits: Model<TraitRecord> };
}

/** Traits: reusable behaviour descriptions attached to agents by id or identifier. */
const TraitsService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, Vars> = {
  name: "traits",
  mixins: [
    EventsMixin({ records: { traits: function (this: Vars, trait) { return traitModel(this.db).hydrate(trait).toJSON(); } } }),
    MongoMixin((db) => ({ traits: traitModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    list: {
      rest: "GET /traits",
      params: { ...sortParams(SORT_FIELDS), ...paginationParams({ max: 200, def: 50 }) },
      async handler(ctx: Ctx<{ sort_by: string; sort_order: "asc" | "desc"; skip: number; limit: number }>) {
        const { skip, limit, sort_by, sort_order } = ctx.params;
        const { rows, total } = await this.listOwned(ctx, this.models.traits, {}, { skip, limit, sort: namedSort(sort_by, sort_order) });
        return toPage(rows.map((t) => t.toJSON()), total, skip, limit);
      },
    },

    create: {
      rest: "POST /traits",
      params: traitFields,
      async handler(ctx: Ctx<TraitParams & { name: string }>) {
        const id = await nextId(this.db, "traits");
        const body = await this.recordChange(changeOf("trait.created", "traits", { _id: id, account_id: this.accountOf(ctx) }), async () => {
          const naming = { name: ctx.params.name, identifier: ctx.params.identifier, label: "Trait" };
          return (await this.createIdentified(ctx, this.models.traits, { ...traitChanges(ctx.params), _id: id }, naming)).toJSON();
        });
        return respondCreated(ctx, `/api/v1/traits/${id}`, body);
      },
    },

    categories: {
      rest: "GET /traits/categories",
      async handler(ctx: Ctx) {
        const counts = await this.models.traits.aggregate<{ _id: string; count: number }>([
          { $match: { account_id: this.accountOf(ctx) } },
          { $group: { _id: "$category", count: { $sum: 1 } } },
        ]);
        return traitCategories(counts);
      },
    },

    get: {
      rest: "GET /traits/:trait_id",
      params: idParam,
      async handler(ctx: Ctx<{ trait_id: number }>) {
        return (await this.findOwned(ctx, this.models.traits, ctx.params.trait_id, "Trait")).toJSON();
      },
    },

    update: {
      rest: ["PUT /traits/:trait_id", "PATCH /traits/:trait_id"],
      params: { ...idParam, ...traitFields, name: { ...traitFields.name, optional: true } },
      async handler(ctx: Ctx<{ trait_id: number } & TraitParams>) {
        const trait = await this.findOwned(ctx, this.models.traits, ctx.params.trait_id, "Trait");
        trait.set(traitChanges(ctx.params));
        return this.recordChange(changeOf("trait.updated", "traits", trait), async () => {
          await this.saveIdentified(trait, "Trait");
          return trait.toJSON();
        });
      },
    },

    remove: {
      rest: "DELETE /traits/:trait_id",
      params: idParam,
      async handler(ctx: Ctx<{ trait_id: number }>) {
        const trait = await this.findOwned(ctx, this.models.traits, ctx.params.trait_id, "Trait");
        await this.recordChange(changeOf("trait.deleted", "traits", trait), async () => {
          await this.models.traits.deleteOne({ _id: trait._id, account_id: trait.account_id });
          return { id: trait._id };
        });
        return respondNoContent(ctx);
      },
    },
  },
};

export default TraitsService;
