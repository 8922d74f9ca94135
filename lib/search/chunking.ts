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
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    if (end < text.length) end = breakPoint(text, end - Math.floor(size * BREAK_SEARCH_FRACTION), end);
    const piece = text.slice(start, end).trim();
    if (piece) chunks.push({ position: chunks.length, text: piece, start, end });
    if (end >= text.length) break;
    let next = Math.max(end - safeOverlap, start + 1);
    // Start the overlap at a word boundary so no chunk begins mid-word.
    while (next < end && next > start + 1 && /\S/.test(text[next - 1]!)) next++;
    start = next;
  }
  return chunks;
}
