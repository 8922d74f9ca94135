/** A user's fields, storage included, are declared once in ./resource.ts; its model and record type derive from them. */
export { userModel, type UserRecord } from "./resource";
