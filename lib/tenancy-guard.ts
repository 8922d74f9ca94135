import { Aggregate, Schema, type Query } from "mongoose";

/**
 * Tenancy by construction: a query on a collection whose records carry `account_id` must filter by it, or say
 * why it spans accounts with the one escape hatch below (`grep -rn crossAccount` lists every such query).
 * Registered once for every schema (lib/db.ts); raw-driver queries call assertAccountScoped themselves.
 */

/** The query option that carries the reason a query may span accounts. */
const OPTION = "crossAccount";

const GUARDED = [
  "countDocuments",
  "distinct",
  "estimatedDocumentCount",
  "find",
  "findOne",
  "findOneAndDelete",
  "findOneAndReplace",
  "findOneAndUpdate",
  "replaceOne",
  "updateMany",
  "updateOne",
  "deleteMany",
  "deleteOne",
] as const;

type Filter = Record<string, unknown> | null | undefined;

/** True when the filter pins the account: `account_id` at its top level or in one of its `$and` branches. */
export function isAccountScoped(filter: Filter): boolean {
  if (!filter || typeof filter !== "object") return false;
  if (filter.account_id !== undefined) return true;
  return Array.isArray(filter.$and) && filter.$and.some((branch) => isAccountScoped(branch as Filter));
}

/** Refuses (throws) a query on tenant data that neither pins the account nor gives a cross-account reason. */
export function assertAccountScoped(collection: string, filter: Filter, reason?: string): void {
  if (reason?.trim() || isAccountScoped(filter)) return;
  throw new Error(`Query on tenant collection "${collection}" without account_id; scope it or give crossAccount(reason, query)`);
}

/** A raw-driver filter on tenant data, checked like a mongoose query's (raw reads call this). */
export function tenantFilter<F extends Record<string, unknown>>(collection: string, filter: F): F {
  assertAccountScoped(collection, filter);
  return filter;
}

/**
 * The one escape hatch: marks a query (or aggregation) as legitimately spanning accounts, with why. Use for
 * lookups by global id whose account is checked after, workers and sweeps over every account, and logins.
 * Given a schema, exempts the whole collection: only for a service's internal bookkeeping whose every key
 * is derived from an account (never for records clients address).
 */
export function crossAccount<T extends Query<any, any> | Aggregate<any> | Schema<any>>(reason: string, target: T): T {
  if (!reason.trim()) throw new Error("crossAccount needs a reason");
  if (target instanceof Schema) target.set(OPTION as never, reason as never);
  else if (target instanceof Aggregate) target.option({ [OPTION]: reason } as never);
  else target.setOptions({ [OPTION]: reason } as never);
  return target;
}

/** Takes the reason off the options (the driver must not see it). */
function takeReason(options: Record<string, unknown> | undefined): string | undefined {
  const reason = options?.[OPTION];
  if (options) delete options[OPTION];
  return typeof reason === "string" ? reason : undefined;
}

/** The mongoose plugin: guards every query and aggregation of schemas that have an `account_id` path. */
export function tenancyGuard(schema: Schema): void {
  if (!schema.path("account_id") || schema.get(OPTION as never)) return;
  schema.pre([...GUARDED], { query: true, document: false }, function (this: Query<unknown, unknown>) {
    assertAccountScoped(this.model.collection.collectionName, this.getFilter() as Filter, takeReason(this.getOptions() as Record<string, unknown>));
  });
  schema.pre("aggregate", function (this: Aggregate<unknown>) {
    const first = this.pipeline()[0] as { $match?: Filter } | undefined;
    assertAccountScoped(this.model().collection.collectionName, first?.$match, takeReason(this.options as Record<string, unknown>));
  });
  // A bulk write's updates, replaces and deletes are queries too, one filter each (its inserts carry their account).
  schema.pre("bulkWrite", function (ops, options) {
    const reason = takeReason(options as Record<string, unknown> | undefined);
    for (const op of ops) {
      const [kind, spec] = Object.entries(op)[0] as [string, { filter?: Filter }];
      if (kind !== "insertOne") assertAccountScoped(this.collection.collectionName, spec.filter, reason);
    }
  });
}
