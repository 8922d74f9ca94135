/*
 * The tools service's public face (docs/adr/0052-service-boundaries.md): the only file of services/tools/ another
 * service may import. The tools collection has one writer, this service: others read it through
 * `toolModel`/`accountTools` and write it only through its batch actions
 * (`tools.putBatch`, `tools.commitBatch`, `tools.undoBatch`; lib/owner-writes.ts), as team push does.
 */

/** The tools collection: its model (for reads) and record type. */
export { toolModel, type ToolRecord } from "./model";
/** An account's tools, all of them or those with these ids. */
export { accountTools } from "./store";
/** The tools resource (its read schema is embedded in an agent). */
export { tools } from "./resource";
