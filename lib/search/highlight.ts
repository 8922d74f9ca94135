import { charBoundary } from "../text";
import { terms, words } from "./tokenizer";

/** Longest highlight (characters of the chunk's text, marks not counted). */
export const HIGHLIGHT_LENGTH = 200;

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * A snippet of a chunk for a citation: the part of its text around the query's matched terms (analysed as the
 * keyword index analyses them: folded, stop words out, stemmed), at most `max` characters, each matching word
 * wrapped in <mark>…</mark>. The text is HTML-escaped so the marks are the only markup. With no word matching
 * (a semantic hit), the chunk's opening. An ellipsis shows where the snippet cuts the text.
 */
export function highlight(content: string, query: string, max = HIGHLIGHT_LENGTH): string {
  const wanted = new Set(terms(query));
  const matches: { start: number; end: number }[] = [];
  if (wanted.size) {
    // A word recurs in a chunk: analyse each distinct one once.
    const matching = new Map<string, boolean>();
    for (const m of content.matchAll(/[\p{L}\p{N}\p{M}]+/gu)) {
      const word = m[0];
      let isMatch = matching.get(word);
      if (isMatch === undefined) matching.set(word, (isMatch = words(word).some((w) => terms(w).some((t) => wanted.has(t)))));
      if (isMatch) matches.push({ start: m.index, end: m.index + word.length });
    }
  }
  let from = 0;
  if (matches.length && content.length > max) {
    // The window that holds the most matches, starting a little before its first one.
    let best = 0;
    let bestCount = 0;
    for (let i = 0, j = 0; i < matches.length; i++) {
      while (j < matches.length && matches[j]!.end - matches[i]!.start <= max) j++;
      if (j - i > bestCount) [best, bestCount] = [i, j - i];
    }
    from = charBoundary(content, Math.max(0, Math.min(matches[best]!.start - Math.floor(max / 5), content.length - max)));
    // Start at a word boundary.
    if (from > 0) {
      const space = content.slice(from, matches[best]!.start).search(/\s/);
      if (space >= 0) from += space + 1;
    }
  }
  let to = charBoundary(content, Math.min(content.length, from + max));
  if (to < content.length) {
    const cut = content.slice(from, to).search(/\s\S*$/);
    if (cut > 0) to = from + cut;
  }
  let out = "";
  let at = from;
  for (const m of matches) {
    if (m.start < from || m.end > to) continue;
    out += `${escapeHtml(content.slice(at, m.start))}<mark>${escapeHtml(content.slice(m.start, m.end))}</mark>`;
    at = m.end;
  }
  out += escapeHtml(content.slice(at, to));
  return `${from > 0 ? "…" : ""}${out.trim()}${to < content.length ? "…" : ""}`;
}
