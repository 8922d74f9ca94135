import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { firstFreeIdentifier, identifierFamily, isIdRef, nextRecordId, slugify } from "./ids";
import { ERRORS as E, isDuplicateKeyError } from "./errors";
import type { Ctx } from "./meta";
import { createRecord } from "./db";
import { crossAccount } from "./tenancy-guard";

/** A record every tenant-owned collection has: an integer `_id` and the owning account. */
export interface OwnedRecord {
  _id: number;
  account_id: number;
}

/** A tenant record addressable by a per-account identifier as well as by id. */
export interface IdentifiedRecord extends OwnedRecord {
  identifier: string;
}

/** Attempts at picking a free generated identifier when concurrent creates race for the same one. */
const IDENTIFIER_ATTEMPTS = 5;

/** An account's records of a collection, all of them or those with these ids (as plain records). */
export function accountRecords<T extends OwnedRecord>(model: Model<T>, accountId: number, ids?: number[]): Promise<T[]> {
  // By id, in id order (an index range); all of them, in natural order (the account index, no sort).
  const query = ids ? model.find({ account_id: accountId, _id: { $in: ids } }).sort({ _id: 1 }) : model.find({ account_id: accountId });
  return query.lean<T[]>();
}

export interface ListOptions {
  skip: number;
  limit: number;
  sort: Record<string, 1 | -1>;
  /** The total as the caller already knows it (a cache); when it resolves undefined, it is counted after. */
  knownTotal?: Promise<number | undefined>;
}

/** A list that needs only some fields. */
export interface SelectListOptions<K extends string> extends ListOptions {
  select: readonly K[];
}

/** Methods the tenancy mixin adds; services declare them in their `this` type. */
export interface TenancyMethods {
  accountOf(ctx: Ctx<unknown>): number;
  findOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, id: number, label: string): Promise<HydratedDocument<T>>;
  /** A page of the account's records, as plain records (lean: render them with lib/db leanToJSON), and their total. */
  listOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, filter: object, opts: ListOptions): Promise<{ rows: T[]; total: number }>;
  listOwned<T extends OwnedRecord, K extends keyof T & string>(
    ctx: Ctx<unknown>,
    model: Model<T>,
    filter: object,
    opts: SelectListOptions<K>,
  ): Promise<{ rows: Pick<T, K | "_id">[]; total: number }>;
  /** Creates a record of the caller's account; returns it as a lean read would (lib/db createRecord). */
  createOwned<T extends OwnedRecord>(ctx: Ctx<unknown>, model: Model<T>, fields: object): Promise<T>;
  findOwnedByRef<T extends IdentifiedRecord>(ctx: Ctx<unknown>, model: Model<T>, ref: string | number, label: string): Promise<HydratedDocument<T>>;
  createIdentified<T extends IdentifiedRecord>(
    ctx: Ctx<unknown>,
    model: Model<T>,
    fields: object,
    naming: { name: string; identifier?: string; label: string; reserved?: readonly string[] },
  ): Promise<T>;
  saveIdentified<T extends IdentifiedRecord>(doc: HydratedDocument<T>, label: string): Promise<void>;
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
      if (typeof accountId !== "number") throw E.unauthorized();
      return accountId;
    },

    async findOwned(this: TenancyMethods, ctx: Ctx<unknown>, model: Model<OwnedRecord>, id: number, label: string) {
      const accountId = this.accountOf(ctx);
      const doc = await crossAccount("a global id; its account is checked next (403)", model.findById(id));
      if (!doc) throw E.notFound(label, id);
      if (doc.account_id !== accountId) throw E.forbidden(`${label} ${id} belongs to another account`);
      return doc;
    },

    async listOwned(this: TenancyMethods, ctx: Ctx<unknown>, model: Model<OwnedRecord>, filter: object, opts: ListOptions | SelectListOptions<string>) {
      const scoped = { ...filter, account_id: this.accountOf(ctx) };
      // The whole page in one reply that also closes the cursor: past the driver's default batch (101) a page took a
      // second round trip, and a batch exactly as long as the page leaves the cursor open until the driver kills it.
      const page = model.find(scoped).sort(opts.sort).skip(opts.skip).limit(opts.limit).batchSize(opts.limit + 1);
      // Lean: building mongoose documents was a quarter of a list's CPU, and lists only read.
      const [rows, total] = await Promise.all([
        ("select" in opts ? page.select(opts.select.join(" ")) : page).lean(),
        (async () => (await opts.knownTotal) ?? model.countDocuments(scoped))(),
      ]);
      return { rows, total };
    },

    async createOwned(this: TenancyMethods & { db: Connection }, ctx: Ctx<unknown>, model: Model<OwnedRecord>, fields: object) {
      const account_id = this.accountOf(ctx);
      // A caller that records a change event for the new record allocates its id first (lib/events.mixin.ts).
      const _id = (fields as { _id?: number })._id ?? (await nextRecordId(this.db, model.collection.collectionName));
      return createRecord(model, { ...fields, _id, account_id });
    },

    /** Looks a record up by numeric id or by its identifier within the caller's account. */
    async findOwnedByRef(this: TenancyMethods, ctx: Ctx<unknown>, model: Model<IdentifiedRecord>, ref: string | number, label: string) {
      if (isIdRef(ref)) {
        // Past 2^53 the digits name no id: as a double they would round to another record's.
        if (!Number.isSafeInteger(Number(ref))) throw E.notFound(label, ref);
        return this.findOwned(ctx, model, Number(ref), label);
      }
      const doc = await model.findOne({ account_id: this.accountOf(ctx), identifier: String(ref) });
      if (!doc) throw E.notFound(label, ref);
      return doc;
    },

    /** Saves an update; an identifier that another record of the account already uses is a 409. */
    async saveIdentified(doc: HydratedDocument<IdentifiedRecord>, label: string) {
      try {
        await doc.save();
      } catch (err) {
        if (isDuplicateKeyError(err)) throw E.conflict(`A ${label.toLowerCase()} with identifier "${doc.identifier}" already exists`);
        throw err;
      }
    },

    /**
     * Creates a record with a per-account unique identifier: the one given (a clash is 409), or one generated
     * from the name ("support-bot", "support-bot-2", ...; a clash with a concurrent create retries).
     */
    async createIdentified(
      this: TenancyMethods,
      ctx: Ctx<unknown>,
      model: Model<IdentifiedRecord>,
      fields: object,
      naming: { name: string; identifier?: string; label: string; reserved?: readonly string[] },
    ) {
      const account_id = this.accountOf(ctx);
      for (let attempt = 1; ; attempt++) {
        let identifier = naming.identifier;
        if (!identifier) {
          const base = slugify(naming.name);
          const taken = await model.find({ account_id, identifier: identifierFamily(base) }, { identifier: 1 }).lean();
          identifier = firstFreeIdentifier(base, [...taken.map((t) => t.identifier), ...(naming.reserved ?? [])]);
        }
        try {
          return await this.createOwned(ctx, model, { ...fields, identifier });
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
          if (naming.identifier) throw E.conflict(`A ${naming.label.toLowerCase()} with identifier "${identifier}" already exists`);
          if (attempt >= IDENTIFIER_ATTEMPTS) throw err;
        }
      }
    },
  },
};
