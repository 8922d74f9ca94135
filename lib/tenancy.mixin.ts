import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS } from "./errors";
import { nextId } from "./ids";
import type { Ctx } from "./meta";

/** A record every tenant-owned collection has: an integer `_id` and the owning account. */
export interface OwnedRecord {
  _id: number;
  account_id: number;
}

export interface ListOptions {
  skip: number;
  limit: number;
  sort: Record<string, 1 | -1>;
}

/** Methods the tenancy mixin adds; services declare them in their `this` type. */
export interface TenancyMethods {
  accountOf(ctx: Ctx<unknown>): number;
  findOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, id: number, label: string): Promise<HydratedDocument<T>>;
  listOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, filter: object, opts: ListOptions): Promise<{ rows: HydratedDocument<T>[]; total: number }>;
  createOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, fields: object): Promise<HydratedDocument<T>>;
}

/**
 * Every query on tenant data goes through these methods: they take the account from ctx.meta (set only by
 * the gateway's authentication) and never from params. Records are looked up by global id, then an
 * account mismatch answers 403, as the interface specifies for another account's record.
 */
export const TenancyMixin: Partial<ServiceSchema> = {
  methods: {
    accountOf(ctx: Ctx<unknown>): number {
      const accountId = ctx.meta.accountId;
      if (typeof accountId !== "number") throw ERRORS.unauthorized();
      return accountId;
    },

    async findOwned(this: TenancyMethods, ctx: Ctx<unknown>, model: Model<OwnedRecord>, id: number, label: string) {
      const accountId = this.accountOf(ctx);
      const doc = await model.findById(id);
      if (!doc) throw ERRORS.notFound(label, id);
      if (doc.account_id !== accountId) throw ERRORS.forbidden(`${label} ${id} belongs to another account`);
      return doc;
    },

    async listOwned(this: TenancyMethods, ctx: Ctx<unknown>, model: Model<OwnedRecord>, filter: object, opts: ListOptions) {
      const scoped = { ...filter, account_id: this.accountOf(ctx) };
      const [rows, total] = await Promise.all([
        model.find(scoped).sort(opts.sort).skip(opts.skip).limit(opts.limit),
        model.countDocuments(scoped),
      ]);
      return { rows, total };
    },

    async createOwned(this: TenancyMethods & { db: Connection }, ctx: Ctx<unknown>, model: Model<OwnedRecord>, fields: object) {
      const account_id = this.accountOf(ctx);
      const _id = await nextId(this.db, model.collection.collectionName);
      return model.create({ ...fields, _id, account_id });
    },
  },
};
