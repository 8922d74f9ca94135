import { clipText, EXCERPT_MAX_CHARS, sessionExcerpt } from "../../../services/entities/excerpt";
import type { MessageRole, Provenance } from "../../../services/entities/types";

const T0 = Date.UTC(2026, 0, 1);
/** Messages with ids 1..n, one minute apart; roles default to alternating user/assistant. */
function session(n: number, roles: Record<number, MessageRole> = {}) {
  return Array.from({ length: n }, (_, i) => ({
    _id: i + 1,
    role: roles[i + 1] ?? (i % 2 === 0 ? "user" : "assistant"),
    text: `message ${i + 1}`,
    created_at: new Date(T0 + i * 60_000),
  }));
}
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const ids = (excerpt: ReturnType<typeof sessionExcerpt>) => excerpt?.map((m) => m.id);
const cite = (...messageIds: (number | null)[]): Provenance =>
  Object.fromEntries(messageIds.map((id, i) => [`attr${i}`, { message_id: id, quote: "q" }]));

describe("clipText", () => {
  it("keeps text of up to 500 characters as is", () => {
    const text = "x".repeat(EXCERPT_MAX_CHARS);
    expect(clipText(text)).toBe(text);
    expect(clipText("")).toBe("");
  });

  it("clips longer text to 500 characters ending in an ellipsis", () => {
    const clipped = clipText("y".repeat(501));
    expect(Array.from(clipped)).toHaveLength(EXCERPT_MAX_CHARS);
    expect(clipped.endsWith("…")).toBe(true);
    expect(clipped.slice(0, -1)).toBe("y".repeat(499));
  });

  it("counts characters, not UTF-16 units, so an emoji is never cut in half", () => {
    const clipped = clipText("😀".repeat(600));
    expect(Array.from(clipped)).toEqual([...Array(499).fill("😀"), "…"]);
    expect(clipText("😀".repeat(500))).toBe("😀".repeat(500));
  });
});

describe("sessionExcerpt", () => {
  it("is null without messages (no session, or a deleted one), never []", () => {
    expect(sessionExcerpt([], null, at(10))).toBeNull();
    expect(sessionExcerpt([], cite(3), at(10))).toBeNull();
  });

  it("is null when the session has only system and tool turns", () => {
    expect(sessionExcerpt(session(3, { 1: "system", 2: "tool", 3: "system" }), null, at(10))).toBeNull();
  });

  it("without provenance shows the last 6 visible messages at or before the record's created_at, by id", () => {
    const excerpt = sessionExcerpt(session(12), null, at(9)); // messages 1..10 are at or before minute 9
    expect(ids(excerpt)).toEqual([5, 6, 7, 8, 9, 10]);
    expect(excerpt![0]).toEqual({ id: 5, role: "user", text: "message 5", created_at: at(4) });
  });

  it("drops system and tool turns before taking the last 6", () => {
    const excerpt = sessionExcerpt(session(10, { 9: "system", 10: "tool", 7: "tool" }), null, at(100));
    expect(ids(excerpt)).toEqual([2, 3, 4, 5, 6, 8]);
    expect(excerpt!.every((m) => m.role === "user" || m.role === "assistant")).toBe(true);
  });

  it("is null when every visible message came after the record", () => {
    expect(sessionExcerpt(session(4), null, at(-1))).toBeNull();
  });

  it("shows fewer than 6 when the session is short", () => {
    expect(ids(sessionExcerpt(session(2), null, at(5)))).toEqual([1, 2]);
  });

  it("with cited ids shows each cited message and one visible neighbour on each side, ordered by id", () => {
    expect(ids(sessionExcerpt(session(20), cite(10), at(100)))).toEqual([9, 10, 11]);
    expect(ids(sessionExcerpt(session(20), cite(15, 5), at(100)))).toEqual([4, 5, 6, 14, 15, 16]);
  });

  it("ignores created_at when citations resolve (cited messages may be later than the window)", () => {
    expect(ids(sessionExcerpt(session(20), cite(18), at(0)))).toEqual([17, 18, 19]);
  });

  it("deduplicates overlapping neighbourhoods and repeated citations", () => {
    expect(ids(sessionExcerpt(session(20), cite(5, 6, 6), at(100)))).toEqual([4, 5, 6, 7]);
  });

  it("has one neighbour only at the ends of the session", () => {
    expect(ids(sessionExcerpt(session(5), cite(1), at(100)))).toEqual([1, 2]);
    expect(ids(sessionExcerpt(session(5), cite(5), at(100)))).toEqual([4, 5]);
  });

  it("takes neighbours among visible messages only, skipping system and tool turns", () => {
    const excerpt = sessionExcerpt(session(10, { 4: "system", 6: "tool" }), cite(5), at(100));
    expect(ids(excerpt)).toEqual([3, 5, 7]);
  });

  it("caps at 6, keeping every cited message before neighbours", () => {
    expect(ids(sessionExcerpt(session(40), cite(5, 10, 15, 20), at(100)))).toEqual([4, 5, 6, 10, 15, 20]);
    const sevenCited = cite(2, 4, 6, 8, 10, 12, 14);
    expect(ids(sessionExcerpt(session(20), sevenCited, at(100)))).toEqual([2, 4, 6, 8, 10, 12]);
  });

  it("falls back to the last 6 before created_at when no cited id is a visible message of the session", () => {
    const messages = session(10, { 3: "system" });
    expect(ids(sessionExcerpt(messages, cite(999), at(100)))).toEqual([5, 6, 7, 8, 9, 10]);
    expect(ids(sessionExcerpt(messages, cite(3), at(100)))).toEqual([5, 6, 7, 8, 9, 10]);
    expect(ids(sessionExcerpt(messages, cite(null), at(100)))).toEqual([5, 6, 7, 8, 9, 10]);
  });

  it("orders by id whatever order the messages come in, and clips long texts", () => {
    const messages = session(3).reverse();
    messages[0]!.text = "z".repeat(800);
    const excerpt = sessionExcerpt(messages, null, at(100));
    expect(ids(excerpt)).toEqual([1, 2, 3]);
    expect(excerpt![2]!.text).toHaveLength(500);
    expect(excerpt![2]!.text.endsWith("…")).toBe(true);
  });
});
