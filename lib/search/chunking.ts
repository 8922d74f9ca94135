/** The interface's default chunk size for knowledge processing (characters). */
export const DEFAULT_CHUNK_SIZE = 1000;
/** Default overlap between consecutive chunks, so a sentence cut at a boundary is whole in one of them. */
export const DEFAULT_CHUNK_OVERLAP = 100;
/** A break is looked for in the last part of a window this long, so chunks stay close to the size asked. */
const BREAK_SEARCH_FRACTION = 0.3;

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

/**
 * Splits content into chunks of at most `size` characters, each starting `overlap` characters before the
 * previous one ended, ending at a natural break when one is near the limit.
 */
export function chunkText(content: string, size = DEFAULT_CHUNK_SIZE, overlap = DEFAULT_CHUNK_OVERLAP): TextChunk[] {
  if (size < 1) throw new RangeError("chunk size must be positive");
  const safeOverlap = Math.max(0, Math.min(overlap, Math.floor(size / 2)));
  const text = normalizeContent(content);
  const chunks: TextChunk[] = [];
  const original = originalIndexes(content, text);
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    if (end < text.length) end = breakPoint(text, end - Math.floor(size * BREAK_SEARCH_FRACTION), end);
    const window = text.slice(start, end);
    const piece = window.trim();
    if (piece) {
      // The trimmed piece begins and ends with a visible character, which maps to the very same one as given.
      const first = start + (window.length - window.trimStart().length);
      const last = first + piece.length - 1;
      chunks.push({ position: chunks.length, text: piece, start, end, docStart: original[first]!, docEnd: original[last]! + 1 });
    }
    if (end >= text.length) break;
    let next = Math.max(end - safeOverlap, start + 1);
    // Start the overlap at a word boundary so no chunk begins mid-word.
    while (next < end && next > start + 1 && /\S/.test(text[next - 1]!)) next++;
    start = next;
  }
  return chunks;
}
