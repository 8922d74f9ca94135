import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { MESSAGE_ROLES, type SessionMessageRecord } from "./types";

const sessionMessageSchema = new Schema<SessionMessageRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    session_id: { type: String, required: true },
    role: { type: String, enum: MESSAGE_ROLES, required: true },
    text: { type: String, default: "" },
    created_at: { type: Date },
  },
  { ...recordSchemaOptions<SessionMessageRecord>(), timestamps: { createdAt: "created_at", updatedAt: false }, collection: "session_messages" },
);
sessionMessageSchema.index({ account_id: 1, session_id: 1 });

/** The session messages model on a given connection (written by the agent runtime through entities.recordSessionMessages). */
export function sessionMessageModel(db: Connection): Model<SessionMessageRecord> {
  return (db.models.SessionMessage as Model<SessionMessageRecord>) ?? db.model<SessionMessageRecord>("SessionMessage", sessionMessageSchema);
}

// A collected data record's fields, storage included, are declared once in ./params.ts; its model and record type
// derive from them.
export { entityModel } from "./params";
