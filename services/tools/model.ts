import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";

export interface ToolRecord {
  _id: number;
  account_id: number;
  name: string;
  identifier: string;
  description: string | null;
  tool_type: string;
  configuration: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const toolSchema = new Schema<ToolRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    name: { type: String, required: true },
    identifier: { type: String, required: true },
    description: { type: String, default: null },
    tool_type: { type: String, default: "function" },
    configuration: { type: Schema.Types.Mixed, default: () => ({}) },
  },
  { ...recordSchemaOptions<ToolRecord>(), minimize: false },
);
// Identifiers are unique per account; this index also serves lookups by identifier.
toolSchema.index({ account_id: 1, identifier: 1 }, { unique: true });
toolSchema.index({ account_id: 1, created_at: -1 });

/** The tools model on a given connection. */
export function toolModel(db: Connection): Model<ToolRecord> {
  return (db.models.Tool as Model<ToolRecord>) ?? db.model<ToolRecord>("Tool", toolSchema);
}
