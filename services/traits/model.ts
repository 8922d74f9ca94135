/** A trait's fields, storage included, are declared once in ./resource.ts; its model and record type derive from them. */
export { traitModel, type TraitRecord } from "./resource";
