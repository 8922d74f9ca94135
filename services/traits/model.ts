import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";

export interface TraitRecord {
  _id: number;
  account_id: number;
  name: string;
  identifier: string;
  category: string;
  description: string | null;
  tags: string[];
  created_at: Date;
  updated_at: Date;
}

const traitSchema = new Schema<TraitRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    name: { type: String, required: true },
    identifier: { type: String, required: true },
    category: { type: String, default: "general" },
    description: { type: String, default: null },
    tags: { type: [String], default: [] },
  },
  recordSchemaOptions<TraitRecord>(),
);
traitSchema.index({ account_id: 1, identifier: 1 }, { unique: true });
traitSchema.index({ account_id: 1, updated_at: -1 });

/** The traits model on a given connection. */
export function traitModel(db: Connection): Model<TraitRecord> {
  return (db.models.Trait as Model<TraitRecord>) ?? db.model<TraitRecord>("Trait", traitSchema);
}
