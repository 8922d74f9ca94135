/*
 * The traits service's public face (docs/adr/0052-service-boundaries.md): the only file of services/traits/ another
 * service may import. The traits collection has one writer, this service: others read it through
 * `traitModel`/`accountTraits` and write it only through `putTrait` (team push).
 */

/** The traits collection: its model (for reads) and record type. */
export { traitModel, type TraitRecord } from "./model";
/** An account's traits; a trait written within a unit of work; a trait's change-event data. */
export { accountTraits, putTrait, traitEventData } from "./store";
/** The traits resource (its read schema is embedded in an agent). */
export { traits } from "./resource";
