export const AGENT_ACCESS_LEVELS = ["private", "public", "password_protected"] as const;
export type AgentAccessLevel = (typeof AGENT_ACCESS_LEVELS)[number];

/** Access levels are accepted in any case (teams use upper case) and stored lower case, as the interface shows them. */
export const accessLevelRule = { type: "string", lowercase: true, enum: AGENT_ACCESS_LEVELS, optional: true } as const;
/** The interface allows at most this many suggested prompts in configuration.chat_ui. */
export const MAX_SUGGESTED_PROMPTS = 8;

/** How an agent is published for chat (set through team push). The password is stored hashed only. */
export interface Publication {
  access_level: AgentAccessLevel;
  chat_uri?: string | null;
  domain?: string | null;
  password_hash?: string | null;
}

// An agent's fields, storage included, are declared once in ./resource.ts; its model and record type derive from
// them. Exported last: ./resource.ts reads the values above while this module loads.
export { agentModel, type AgentRecord } from "./resource";
