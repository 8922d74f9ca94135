import type { Connection, Model } from "mongoose";
import { namedRecordSchema, type NamedRecord } from "../../lib/db";
import { freeJson } from "../../lib/free-json";

export interface ToolRecord extends NamedRecord {
  tool_type: string;
  configuration: Record<string, unknown>;
}

const toolSchema = namedRecordSchema<ToolRecord>(
  {
    tool_type: { type: String, default: "function" },
    configuration: freeJson({ default: () => ({}) }),
  },
  { minimize: false },
);
// The list is newest first.
toolSchema.index({ account_id: 1, created_at: -1, _id: -1 });

/** The tools model on a given connection. */
export function toolModel(db: Connection): Model<ToolRecord> {
  return (db.models.Tool as Model<ToolRecord>) ?? db.model<ToolRecord>("Tool", toolSchema);
}
