import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { freeJson, freeJsonFields } from "../../lib/free-json";
import { attributeKeys, searchText, templateKey } from "./rules";
import { DISPLAY_FIELDS, ENTITY_STATUSES, MESSAGE_ROLES, type EntityRecord, type SessionMessageRecord } from "./types";

const nullableString = { type: String, default: null };

const entitySchema = new Schema<EntityRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    agent_id: { type: Number, required: true },
    agent_name: { type: String, required: true },
    template_id: { type: Number, default: null },
    entity_type_name: { type: String, required: true },
    entity_type_icon: nullableString,
    status: { type: String, enum: ENTITY_STATUSES, default: "new" },
    attributes: freeJson({ default: () => ({}) }),
    confidence_score: { type: Number, default: null },
    ...Object.fromEntries(DISPLAY_FIELDS.map((f) => [f, nullableString])),
    session_id: nullableString,
    provenance: freeJson({ default: null }),
    search_text: { type: String, default: "" },
    entity_type_key: { type: String, default: "" },
    attribute_keys: { type: [String], default: [] },
    // Given explicitly by internal callers that import history; mongoose keeps a created_at that is set.
    created_at: { type: Date },
  },
  { ...recordSchemaOptions<EntityRecord>(["search_text", "entity_type_key", "attribute_keys"]), collection: "entities", minimize: false },
);
entitySchema.plugin(freeJsonFields);
entitySchema.index({ account_id: 1, created_at: -1, _id: -1 });
entitySchema.index({ account_id: 1, agent_id: 1 });
// Every write goes through save(), so the derived fields are always in step with what they derive from.
entitySchema.pre("validate", function () {
  // Read once: each read of a free-form field decodes it.
  const attributes = this.attributes ?? {};
  this.search_text = searchText(this.agent_name, this.entity_type_name, attributes);
  this.entity_type_key = templateKey(this.entity_type_name);
  this.attribute_keys = attributeKeys(attributes);
});

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

/** The collected data records model on a given connection. */
export function entityModel(db: Connection): Model<EntityRecord> {
  return (db.models.Entity as Model<EntityRecord>) ?? db.model<EntityRecord>("Entity", entitySchema);
}

/** The session messages model on a given connection (written by the agent runtime through entities.recordSessionMessages). */
export function sessionMessageModel(db: Connection): Model<SessionMessageRecord> {
  return (db.models.SessionMessage as Model<SessionMessageRecord>) ?? db.model<SessionMessageRecord>("SessionMessage", sessionMessageSchema);
}
