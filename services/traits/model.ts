import type { Connection, Model } from "mongoose";
import { namedRecordSchema, type NamedRecord } from "../../lib/db";

export interface TraitRecord extends NamedRecord {
  category: string;
  tags: string[];
}

const traitSchema = namedRecordSchema<TraitRecord>({
  category: { type: String, default: "general" },
  tags: { type: [String], default: [] },
});

/** The traits model on a given connection. */
export function traitModel(db: Connection): Model<TraitRecord> {
  return (db.models.Trait as Model<TraitRecord>) ?? db.model<TraitRecord>("Trait", traitSchema);
}
