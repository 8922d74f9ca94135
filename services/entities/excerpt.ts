import { citedMessageIds } from "./rules";
import type { Provenance, SessionMessageRecord } from "./types";
import { clipChars } from "../../lib/text";

/** At most this many messages in a session excerpt. */
export const EXCERPT_MAX_MESSAGES = 6;
/** Excerpt texts are clipped to this many characters, the ellipsis included. */
export const EXCERPT_MAX_CHARS = 500;
const ELLIPSIS = "…";
/** System and tool turns are never shown. */
export const VISIBLE_ROLES = ["user", "assistant"] as const;
const visibleRoles = new Set<string>(VISIBLE_ROLES);

type SessionMessage = Pick<SessionMessageRecord, "_id" | "role" | "text" | "created_at">;

/** One message of ExtractedEntityDetailRead.session_excerpt. */
export interface ExcerptMessage {
  id: number;
  role: "user" | "assistant";
  text: string;
  created_at: Date;
}

/** Text clipped to EXCERPT_MAX_CHARS characters, with a trailing ellipsis when clipped. */
export function clipText(text: string): string {
  // Clipping reads only as far as the limit: a long message is not counted to its end.
  const head = clipChars(text, EXCERPT_MAX_CHARS);
  return head.length === text.length ? text : clipChars(head, EXCERPT_MAX_CHARS - 1) + ELLIPSIS;
}

/**
 * The cited messages plus one visible neighbour on each side, by id. When more than the cap, cited
 * messages are kept first (earliest first), then neighbours. Null when no cited id is a visible message.
 */
function citedWindow(visible: SessionMessage[], cited: ReadonlySet<number>): SessionMessage[] | null {
  const citedAt = visible.flatMap((m, i) => (cited.has(m._id) ? [i] : []));
  if (!citedAt.length) return null;
  const neighbours = [...new Set(citedAt.flatMap((i) => [i - 1, i + 1]))]
    .filter((i) => i >= 0 && i < visible.length && !citedAt.includes(i))
    .sort((a, b) => a - b);
  return [...citedAt, ...neighbours]
    .slice(0, EXCERPT_MAX_MESSAGES)
    .sort((a, b) => a - b)
    .map((i) => visible[i]!);
}

/** The last visible messages sent at or before the record was made. */
function lastBefore(visible: SessionMessage[], recordedAt: Date): SessionMessage[] {
  return visible.filter((m) => m.created_at.getTime() <= recordedAt.getTime()).slice(-EXCERPT_MAX_MESSAGES);
}

/**
 * The conversation shown with a record's detail: around the messages its provenance cites, otherwise the
 * last messages before it was recorded. Null (never []) when there is nothing to show: no session, a
 * deleted session, or no visible message. Cited ids that no longer resolve (sessions hard-delete
 * messages) fall back to the second rule.
 */
export function sessionExcerpt(messages: SessionMessage[], provenance: Provenance | null, recordedAt: Date): ExcerptMessage[] | null {
  const visible = messages.filter((m) => visibleRoles.has(m.role)).sort((a, b) => a._id - b._id);
  const picked = citedWindow(visible, new Set(citedMessageIds(provenance))) ?? lastBefore(visible, recordedAt);
  if (!picked.length) return null;
  return picked.map((m) => ({ id: m._id, role: m.role as ExcerptMessage["role"], text: clipText(m.text), created_at: m.created_at }));
}
