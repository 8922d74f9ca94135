import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";

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

export interface TeamRecord {
  _id: number;
  account_id: number;
  name: string;
  sort_name: string;
  identifier: string;
  description: string | null;
  access_level: TeamAccessLevel;
  access_password_hash: string | null;
  image_url: string | null;
  configuration: Record<string, unknown>;
  agent_ids: number[];
  /** Tools a push declared for the team (pull returns them). */
  tool_ids: number[];
  knowledge: KnowledgeConfig[];
  created_at: Date;
  updated_at: Date;
}

const teamSchema = new Schema<TeamRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    name: { type: String, required: true },
    sort_name: { type: String, required: true },
    identifier: { type: String, required: true },
    description: { type: String, default: null },
    access_level: { type: String, enum: TEAM_ACCESS_LEVELS, default: "PRIVATE" },
    access_password_hash: { type: String, default: null },
    image_url: { type: String, default: null },
    configuration: { type: Schema.Types.Mixed, default: () => ({}) },
    agent_ids: { type: [Number], default: [] },
    tool_ids: { type: [Number], default: [] },
    knowledge: { type: Schema.Types.Mixed, default: () => [] },
  },
  { ...recordSchemaOptions<TeamRecord>(["sort_name", "access_password_hash", "tool_ids", "knowledge"]), minimize: false },
);
teamSchema.index({ account_id: 1, identifier: 1 }, { unique: true });
teamSchema.index({ account_id: 1, updated_at: -1 });
// Anonymous reads of public and password-protected teams by identifier.
teamSchema.index({ identifier: 1, access_level: 1 });
teamSchema.pre("validate", function () {
  this.sort_name = this.name.toLowerCase();
});

/** The teams model on a given connection. */
export function teamModel(db: Connection): Model<TeamRecord> {
  return (db.models.Team as Model<TeamRecord>) ?? db.model<TeamRecord>("Team", teamSchema);
}
