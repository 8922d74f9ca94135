/*
 * The tools service's public face (docs/adr/0052-service-boundaries.md): the only file of services/tools/ another
 * service may import. The tools collection has one writer, this service: others read it through
 * `toolModel`/`accountTools` and write it only through `putTool` (team push).
 */

/** The tools collection: its model (for reads) and record type. */
export { toolModel, type ToolRecord } from "./model";
/** An account's tools; a tool written within a unit of work; a tool's change-event data. */
export { accountTools, putTool, toolEventData } from "./store";
/** The tools resource (its read schema is embedded in an agent). */
export { tools } from "./resource";
