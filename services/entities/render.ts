import type { ExcerptMessage } from "./excerpt";
import type { EntityRecord } from "./types";

/** ExtractedEntityRead: a record as lists show it (no provenance, no excerpt). */
export function entityRead(e: EntityRecord) {
  return {
    id: e._id,
    account_id: e.account_id,
    agent_id: e.agent_id,
    agent_name: e.agent_name,
    template_id: e.template_id ?? null,
    entity_type_name: e.entity_type_name,
    entity_type_icon: e.entity_type_icon ?? null,
    status: e.status,
    attributes: e.attributes ?? {},
    confidence_score: e.confidence_score ?? null,
    display_name: e.display_name ?? null,
    contact_email: e.contact_email ?? null,
    contact_phone: e.contact_phone ?? null,
    display_summary: e.display_summary ?? null,
    session_channel: e.session_channel ?? null,
    session_id: e.session_id ?? null,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

/** ExtractedEntityDetailRead: the list view plus where each attribute came from and the conversation around it. */
export function entityDetailRead(e: EntityRecord, sessionExcerpt: ExcerptMessage[] | null) {
  return { ...entityRead(e), provenance: e.provenance ?? null, session_excerpt: sessionExcerpt };
}

export type EntityView = ReturnType<typeof entityRead>;
export type EntityDetailView = ReturnType<typeof entityDetailRead>;
