/**
 * Text measured and cut in characters as the interface counts them: Unicode code points, which is also what JSON
 * Schema's minLength and maxLength count. A JavaScript string is indexed in UTF-16 units, in which a character
 * outside the Basic Multilingual Plane (most emoji) is two, a surrogate pair. Half a pair is not valid UTF-8:
 * MongoDB's driver stores it as U+FFFD and Typesense refuses the document, so text is never cut between the two.
 */

const SURROGATE = /[\uD800-\uDFFF]/;

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** Whether a text has no lone surrogate (half a pair). */
export function wellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** The text with each lone surrogate replaced by U+FFFD, as a UTF-8 encoder writes it (same length). */
export function toWellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed();
}

/** How many characters (code points) a text has; a lone surrogate counts as one, as JSON Schema counts it. */
export function charCount(text: string): number {
  let count = text.length;
  // Most text has no surrogate at all, which a native scan tells; only text with some is walked.
  if (!SURROGATE.test(text)) return count;
  for (let i = 0; i < text.length - 1; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1))) (count--, i++);
  }
  return count;
}

/** `index` into `text`, moved back by one when it falls inside a surrogate pair, so a cut there keeps the pair whole. */
export function charBoundary(text: string, index: number): number {
  return index > 0 && index < text.length && isLowSurrogate(text.charCodeAt(index)) && isHighSurrogate(text.charCodeAt(index - 1)) ? index - 1 : index;
}

/** The first `max` characters of a text (the text itself when it has no more). */
export function clipChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let units = 0;
  for (let chars = 0; chars < max && units < text.length; chars++) {
    units += isHighSurrogate(text.charCodeAt(units)) && isLowSurrogate(text.charCodeAt(units + 1)) ? 2 : 1;
  }
  return text.slice(0, units);
}
