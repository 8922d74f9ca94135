import { Schema, type Connection, type Model } from "mongoose";
import { DOMAINS_COLLECTION } from "../../lib/collections";
import { namedRecordSchema, type NamedRecord } from "../../lib/db";
import { freeJson } from "../../lib/free-json";

export const TEAM_ACCESS_LEVELS = ["PRIVATE", "PASSWORD_PROTECTED", "PUBLIC"] as const;
export type TeamAccessLevel = (typeof TEAM_ACCESS_LEVELS)[number];

/** A knowledge entry of a team configuration document, kept as pushed so pull can return it. */
export interface KnowledgeConfig {
  name: string;
  description?: string;
  type: string;
  source: string;
  processing?: Record<string, unknown>;
}

export interface TeamRecord extends NamedRecord {
  access_level: TeamAccessLevel;
  access_password_hash: string | null;
  image_url: string | null;
  configuration: Record<string, unknown>;
  agent_ids: number[];
  /** Tools a push declared for the team (pull returns them). */
  tool_ids: number[];
  knowledge: KnowledgeConfig[];
}

const teamSchema = namedRecordSchema<TeamRecord>(
  {
    access_level: { type: String, enum: TEAM_ACCESS_LEVELS, default: "PRIVATE" },
    access_password_hash: { type: String, default: null },
    image_url: { type: String, default: null },
    configuration: freeJson({ default: () => ({}) }),
    agent_ids: { type: [Number], default: [] },
    tool_ids: { type: [Number], default: [] },
    knowledge: freeJson({ default: () => [] }),
  },
  { hidden: ["access_password_hash", "tool_ids", "knowledge"], minimize: false },
);
// Anonymous reads of public and password-protected teams by identifier.
teamSchema.index({ identifier: 1, access_level: 1 });
// Team push finds the team by identifier or by name, the oldest first.
teamSchema.index({ account_id: 1, name: 1, _id: 1 });

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

/** The teams model on a given connection. */
export function teamModel(db: Connection): Model<TeamRecord> {
  return (db.models.Team as Model<TeamRecord>) ?? db.model<TeamRecord>("Team", teamSchema);
}
