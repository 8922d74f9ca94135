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

/** A collected data record: what an agent extracted from a conversation with a data template. */
export interface EntityRecord {
  _id: number;
  account_id: number;
  agent_id: number;
  /** Copied from the agent when the record is made, so it survives renames in exports. */
  agent_name: string;
  template_id: number | null;
  entity_type_name: string;
  entity_type_icon: string | null;
  status: EntityStatus;
  attributes: Record<string, unknown>;
  confidence_score: number | null;
  display_name: string | null;
  contact_email: string | null;
  contact_phone: string | null;
  display_summary: string | null;
  session_channel: string | null;
  session_id: string | null;
  provenance: Provenance | null;
  /** Lower-cased attribute values, agent name and type name: `search` is one substring match. */
  search_text: string;
  /** Lower-cased template name: the case-insensitive template_name filter is an equality match. */
  entity_type_key: string;
  /** Sorted attribute names: the export header comes from one distinct() instead of reading every row twice. */
  attribute_keys: string[];
  created_at: Date;
  updated_at: Date;
}

/** One turn of a chat session, kept so a record's detail can show the conversation it came from. */
export interface SessionMessageRecord {
  _id: number;
  account_id: number;
  session_id: string;
  role: MessageRole;
  text: string;
  created_at: Date;
}
