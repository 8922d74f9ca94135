/** A tool's fields, storage included, are declared once in ./resource.ts; its model and record type derive from them. */
export { toolModel, type ToolRecord } from "./resource";
