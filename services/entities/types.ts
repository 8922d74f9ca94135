export const ENTITY_STATUSES = ["new", "reviewed", "actioned", "archived"] as const;
export type EntityStatus = (typeof ENTITY_STATUSES)[number];

export const MESSAGE_ROLES = ["user", "assistant", "system", "tool"] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** Where an extracted attribute came from: the message it was read from (when verified) and the quoted words. */
export interface ProvenanceEntry {
  message_id: number | null;
  quote: string;
}
export type Provenance = Record<string, ProvenanceEntry>;

/** The identity fields the server resolves for display; all nullable. */
export const DISPLAY_FIELDS = ["display_name", "contact_email", "contact_phone", "display_summary", "session_channel"] as const;

/** A collected data record, as its declaration (./params.ts) stores it. */
export type { EntityRecord } from "./params";

/** One turn of a chat session, kept so a record's detail can show the conversation it came from. */
export interface SessionMessageRecord {
  _id: number;
  account_id: number;
  session_id: string;
  role: MessageRole;
  text: string;
  created_at: Date;
}
