import type { Connection, Model } from "mongoose";
import { namedRecordSchema, type NamedRecord } from "../../lib/db";
import { freeJson } from "../../lib/free-json";

export const AGENT_ACCESS_LEVELS = ["private", "public", "password_protected"] as const;
export type AgentAccessLevel = (typeof AGENT_ACCESS_LEVELS)[number];

/** How an agent is published for chat (set through team push). The password is stored hashed only. */
export interface Publication {
  access_level: AgentAccessLevel;
  chat_uri?: string | null;
  domain?: string | null;
  password_hash?: string | null;
}

export interface AgentRecord extends NamedRecord {
  instructions: string | null;
  model: string;
  temperature: number;
  max_tokens: number | null;
  access_level: AgentAccessLevel;
  image_url: string | null;
  configuration: Record<string, unknown>;
  trait_ids: number[];
  tool_ids: number[];
  knowledge_source_ids: number[];
  publication: Publication | null;
  events: Record<string, unknown>[];
  delegations: Record<string, unknown>[];
}

const agentSchema = namedRecordSchema<AgentRecord>(
  {
    instructions: { type: String, default: null },
    model: { type: String, required: true },
    temperature: { type: Number, default: 0.7 },
    max_tokens: { type: Number, default: null },
    access_level: { type: String, enum: AGENT_ACCESS_LEVELS, default: "private" },
    image_url: { type: String, default: null },
    configuration: freeJson({ default: () => ({}) }),
    trait_ids: { type: [Number], default: [] },
    tool_ids: { type: [Number], default: [] },
    knowledge_source_ids: { type: [Number], default: [] },
    publication: freeJson({ default: null }),
    events: freeJson({ default: () => [] }),
    delegations: freeJson({ default: () => [] }),
  },
  { minimize: false },
);

/** The agents model on a given connection. */
export function agentModel(db: Connection): Model<AgentRecord> {
  return (db.models.Agent as Model<AgentRecord>) ?? db.model<AgentRecord>("Agent", agentSchema);
}
