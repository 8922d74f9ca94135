import type { FieldProblem } from "../errors";
import { charBoundary } from "../text";

/** The interface's default chunk size for knowledge processing (characters). */
export const DEFAULT_CHUNK_SIZE = 1000;
/** Default overlap between consecutive chunks, so a sentence cut at a boundary is whole in one of them. */
export const DEFAULT_CHUNK_OVERLAP = 100;
/** A break is looked for in the last part of a window this long, so chunks stay close to the size asked. */
const BREAK_SEARCH_FRACTION = 0.3;

/**
 * How a source's documents are cut (docs/adr/0059-chunking-per-source.md):
 * - `fixed`: windows of at most `size` characters, each ending at the last paragraph, sentence or word break in
 *   its final 30% (never mid-word), the next starting `overlap` characters earlier. What every source had before
 *   per-source settings, so it stays the default and its chunks (and index keys) are unchanged.
 * - `sentence`: whole sentences packed up to `size`; the next chunk repeats the last whole sentences that fit in
 *   `overlap`. A sentence longer than `size` is cut as `fixed` cuts.
 * - `heading`: a chunk never spans two sections (a Markdown `#` heading line or an HTML `<h1>`-`<h6>` starts one);
 *   a section longer than `size` is cut as `fixed` cuts, with its overlap inside the section.
 */
export const CHUNKING_STRATEGIES = ["fixed", "sentence", "heading"] as const;
export type ChunkingStrategy = (typeof CHUNKING_STRATEGIES)[number];
export interface ChunkingSettings {
  size: number;
  overlap: number;
  strategy: ChunkingStrategy;
}
/** Bounds of a source's `chunking.size` (characters): below, chunks lose context; above, embedding models truncate. */
export const MIN_CHUNK_SIZE = 100;
export const MAX_CHUNK_SIZE = 8000;

export interface TextChunk {
  /** 0-based position of the chunk in its document. */
  position: number;
  text: string;
  /** Character offsets into the (whitespace-normalised) content. */
  start: number;
  end: number;
  /**
   * Character range of the chunk's text in the content as given (before normalisation), so a citation can point
   * into the stored document: content.slice(docStart, docEnd) is the chunk's text, whitespace runs aside.
   */
  docStart: number;
  docEnd: number;
}

/** The chunking a source's documents get: its own settings, else the deployment's (SEARCH_CHUNK_SIZE, _OVERLAP), fixed. */
export function effectiveChunking(own: ChunkingSettings | null | undefined, deployment: { chunkSize: number; chunkOverlap: number }): ChunkingSettings {
  if (own) return own;
  return { size: deployment.chunkSize, overlap: Math.min(deployment.chunkOverlap, Math.floor(deployment.chunkSize / 2)), strategy: "fixed" };
}

/** Equal settings, whatever else a stored copy carries. */
export function sameChunking(a: ChunkingSettings | null | undefined, b: ChunkingSettings | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.size === b.size && a.overlap === b.overlap && a.strategy === b.strategy;
}

/** Stored settings as plain fields (a source's sub-document carries more), or null. */
export function plainChunking(c: ChunkingSettings | null | undefined): ChunkingSettings | null {
  return c ? { size: c.size, overlap: c.overlap, strategy: c.strategy } : null;
}

/** A source's `chunking` as given on create or update; missing fields come from the current settings. */
export type ChunkingInput = Partial<ChunkingSettings>;

/**
 * The settings a source's `chunking` input makes over `base` (its current ones, or the deployment's default), or
 * the problems the params schema cannot see: the overlap may be at most half the size (of the new settings).
 */
export function chunkingSettings(input: ChunkingInput, base: ChunkingSettings): { settings: ChunkingSettings | null; problems: FieldProblem[] } {
  const settings: ChunkingSettings = { size: input.size ?? base.size, overlap: input.overlap ?? base.overlap, strategy: input.strategy ?? base.strategy };
  // An overlap carried over from the base shrinks with a smaller size, as the deployment default always did.
  if (input.overlap === undefined) settings.overlap = Math.min(settings.overlap, Math.floor(settings.size / 2));
  if (settings.overlap > Math.floor(settings.size / 2)) {
    const message = `The 'chunking.overlap' field must be at most half of chunking.size (${Math.floor(settings.size / 2)} for size ${settings.size}).`;
    return { settings: null, problems: [{ field: "chunking.overlap", message, type: "numberMax", location: "body" }] };
  }
  return { settings, problems: [] };
}

/** Collapses runs of blank space (keeping paragraph breaks) so offsets and sizes mean visible text. */
export function normalizeContent(content: string): string {
  return content
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t\f\v\u00a0]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * For each character of the normalised content, its index in the content as given. Normalising only drops or
 * replaces blank space, so the other characters keep their order: each is found by skipping what was dropped.
 */
function originalIndexes(content: string, text: string): Int32Array {
  const map = new Int32Array(text.length);
  let j = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === " " || c === "\n") {
      while (j < content.length && !/\s/.test(content[j]!)) j++;
    } else {
      while (j < content.length && content[j] !== c) j++;
    }
    map[i] = Math.min(j, Math.max(0, content.length - 1));
    if (j < content.length) j++;
  }
  return map;
}

/** Index of the best place to end a chunk inside [from, to): a paragraph, then a sentence, then a word boundary. */
function breakPoint(text: string, from: number, to: number): number {
  const window = text.slice(from, to);
  for (const pattern of [/\n\n/g, /[.!?]["')\]]?\s/g, /\n/g, /\s/g]) {
    let last = -1;
    for (const m of window.matchAll(pattern)) last = m.index + m[0].length;
    if (last > 0) return from + last;
  }
  return to;
}

/** A [start, end) range of the normalised text that becomes a chunk (trimmed; an empty one is dropped). */
type Span = [number, number];

/** The `fixed` windows over text[from, to). */
function fixedSpans(text: string, from: number, to: number, size: number, overlap: number): Span[] {
  const spans: Span[] = [];
  let start = from;
  while (start < to) {
    let end = Math.min(start + size, to);
    // A cut without a natural break keeps a surrogate pair whole (a chunk of one character may take two units).
    if (end < to) end = charBoundary(text, breakPoint(text, end - Math.floor(size * BREAK_SEARCH_FRACTION), end));
    if (end <= start) end = Math.min(to, start + 2);
    spans.push([start, end]);
    if (end >= to) break;
    let next = Math.max(end - overlap, start + 1);
    // Start the overlap at a word boundary so no chunk begins mid-word.
    while (next < end && next > start + 1 && /\S/.test(text[next - 1]!)) next++;
    next = charBoundary(text, next);
    start = next > start ? next : end;
  }
  return spans;
}

/** Sentences of text[from, to): each ends after . ! or ? (and a closing quote or bracket) or at a line break. */
export function sentenceSpans(text: string, from: number, to: number): Span[] {
  const spans: Span[] = [];
  let start = from;
  for (const m of text.slice(from, to).matchAll(/[.!?]["')\]]?(?=\s)|(?=\n)/g)) {
    const end = from + m.index + m[0].length;
    if (end > start && text.slice(start, end).trim()) spans.push([start, end]);
    start = end;
  }
  if (text.slice(start, to).trim()) spans.push([start, to]);
  // Leading blank space belongs to no sentence: each starts at its first visible character.
  return spans.map(([s, e]) => {
    while (/\s/.test(text[s]!)) s++;
    return [s, e];
  });
}

/** The `sentence` chunks over text[from, to). */
function sentencePackedSpans(text: string, from: number, to: number, size: number, overlap: number): Span[] {
  const sentences = sentenceSpans(text, from, to);
  const spans: Span[] = [];
  let i = 0;
  while (i < sentences.length) {
    const [start, firstEnd] = sentences[i]!;
    if (firstEnd - start > size) {
      spans.push(...fixedSpans(text, start, firstEnd, size, overlap));
      i++;
      continue;
    }
    let last = i;
    while (last + 1 < sentences.length && sentences[last + 1]![1] - start <= size) last++;
    const end = sentences[last]![1];
    spans.push([start, end]);
    if (last + 1 >= sentences.length) break;
    // The next chunk repeats the last whole sentences that fit in the overlap, if the sentence after them fits too.
    let next = last + 1;
    while (next - 1 > i && end - sentences[next - 1]![0] <= overlap) next--;
    if (next <= last && sentences[last + 1]![1] - sentences[next]![0] > size) next = last + 1;
    i = next;
  }
  return spans;
}

/**
 * Where sections of the normalised text begin: at a Markdown ATX heading line (outside code fences) or an HTML
 * `<h1>`-`<h6>` tag. Offsets ascending; 0 is not listed.
 */
export function headingStarts(text: string): number[] {
  const starts: number[] = [];
  let inFence = false;
  let at = 0;
  for (const line of text.split("\n")) {
    if (/^(```|~~~)/.test(line)) inFence = !inFence;
    else if (!inFence && /^#{1,6}\s+\S/.test(line) && at > 0) starts.push(at);
    at += line.length + 1;
  }
  for (const m of text.matchAll(/<h[1-6][\s>]/gi)) if (m.index > 0) starts.push(m.index);
  return [...new Set(starts)].sort((a, b) => a - b);
}

/** True when a section is its heading and nothing else (a subheading follows at once). */
function headingOnly(section: string): boolean {
  const s = section.trim();
  return s.startsWith("<") ? /^<h([1-6])[^>]*>[\s\S]*?<\/h\1>$/i.test(s) : !s.includes("\n");
}

/** The `heading` chunks: a section each (a heading alone joins the section after it), long sections cut as `fixed`. */
function headingSpans(text: string, size: number, overlap: number, marked: number[]): Span[] {
  const starts = [...new Set([...headingStarts(text), ...marked])].filter((at) => at > 0 && at < text.length).sort((a, b) => a - b);
  const bounds = [0, ...starts, text.length];
  const sections: Span[] = [];
  // Headings with nothing under them (any run of them) stay with what follows.
  let headingsOnly = false;
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [start, end] = [bounds[i]!, bounds[i + 1]!];
    const last = sections[sections.length - 1];
    if (last && headingsOnly) last[1] = end;
    else sections.push([start, end]);
    headingsOnly = headingOnly(text.slice(start, end));
  }
  return sections.flatMap(([start, end]) => (end - start <= size ? [[start, end] as Span] : fixedSpans(text, start, end, size, overlap)));
}

/** The position in the normalised text of each offset into the content as given (the first character at or after it). */
function normalisedOffsets(original: Int32Array, offsets: number[]): number[] {
  return offsets.map((at) => {
    let [lo, hi] = [0, original.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (original[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  });
}

/**
 * Splits content into chunks by a strategy (see CHUNKING_STRATEGIES); each has its range in the normalised text
 * and in the content as given (a citation's offsets). The overlap is capped at half the size. `sections`: offsets
 * into the content where a reader saw a heading begin (its text keeps no markup), used by `heading` beside the
 * headings it finds in the text.
 */
export function chunkContent(content: string, settings: ChunkingSettings, sections: number[] = []): TextChunk[] {
  const { size, strategy } = settings;
  if (size < 1) throw new RangeError("chunk size must be positive");
  const overlap = Math.max(0, Math.min(settings.overlap, Math.floor(size / 2)));
  const text = normalizeContent(content);
  const original = originalIndexes(content, text);
  const spans =
    strategy === "sentence" ? sentencePackedSpans(text, 0, text.length, size, overlap)
    : strategy === "heading" ? headingSpans(text, size, overlap, normalisedOffsets(original, sections))
    : fixedSpans(text, 0, text.length, size, overlap);
  const chunks: TextChunk[] = [];
  for (const [start, end] of spans) {
    const window = text.slice(start, end);
    const piece = window.trim();
    if (!piece) continue;
    // The trimmed piece begins and ends with a visible character, which maps to the very same one as given.
    const first = start + (window.length - window.trimStart().length);
    const last = first + piece.length - 1;
    chunks.push({ position: chunks.length, text: piece, start, end, docStart: original[first]!, docEnd: original[last]! + 1 });
  }
  return chunks;
}

/**
 * Splits content into `fixed` chunks of at most `size` characters, each starting `overlap` characters before the
 * previous one ended, ending at a natural break when one is near the limit.
 */
export function chunkText(content: string, size = DEFAULT_CHUNK_SIZE, overlap = DEFAULT_CHUNK_OVERLAP): TextChunk[] {
  return chunkContent(content, { size, overlap, strategy: "fixed" });
}
