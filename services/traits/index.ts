/*
 * The traits service's public face (docs/adr/0052-service-boundaries.md): the only file of services/traits/ another
 * service may import. The traits collection has one writer, this service: others read it through
 * `traitModel`/`accountTraits` and write it only through its batch actions
 * (`traits.putBatch`, `traits.commitBatch`, `traits.undoBatch`; lib/owner-writes.ts), as team push does.
 */

/** The traits collection: its model (for reads) and record type. */
export { traitModel, type TraitRecord } from "./model";
/** An account's traits, all of them or those with these ids. */
export { accountTraits } from "./store";
/** The traits resource (its read schema is embedded in an agent). */
export { traits } from "./resource";
