import { Schema, type Connection, type Model } from "mongoose";
import { DOMAINS_COLLECTION } from "../../lib/collections";

export const TEAM_ACCESS_LEVELS = ["PRIVATE", "PASSWORD_PROTECTED", "PUBLIC"] as const;
export type TeamAccessLevel = (typeof TEAM_ACCESS_LEVELS)[number];

/** Access levels are accepted in any case and stored upper case, as the interface shows them. */
export const accessLevelRule = { type: "string", uppercase: true, enum: TEAM_ACCESS_LEVELS, optional: true } as const;

/** A knowledge entry of a team configuration document, kept as pushed so pull can return it. */
export interface KnowledgeConfig {
  name: string;
  description?: string;
  type: string;
  source: string;
  processing?: Record<string, unknown>;
}

/** A custom domain an account may publish agents on (operators register them; push checks them). */
export interface DomainRecord {
  account_id: number;
  hostname: string;
}

const domainSchema = new Schema<DomainRecord>(
  { account_id: { type: Number, required: true }, hostname: { type: String, required: true } },
  { collection: DOMAINS_COLLECTION, versionKey: false },
);
// Push reads the account's domains.
domainSchema.index({ account_id: 1 });

/** The domains model on a given connection. */
export function domainModel(db: Connection): Model<DomainRecord> {
  return (db.models.Domain as Model<DomainRecord>) ?? db.model<DomainRecord>("Domain", domainSchema);
}

// A team's fields, storage included, are declared once in ./resource.ts; its model and record type derive from
// them. Exported last: ./resource.ts reads the values above while this module loads.
export { teamModel, type TeamRecord } from "./resource";
