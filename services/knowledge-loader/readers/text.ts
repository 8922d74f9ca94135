import { clipChars } from "../../../lib/text";

/** Longest title a reader gives a document, in characters; longer ones are templates gone wrong. */
const MAX_TITLE_CHARS = 300;

/**
 * Text as the index wants it: LF line ends, no BOM or control characters, no trailing spaces, at most one
 * blank line in a row. Shared by every reader so chunk boundaries behave alike.
 */
export function normaliseText(text: string): string {
  return text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, "")
    .replace(/[ \t]+$/gm, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** A document title, shortened to MAX_TITLE_CHARS characters. */
export function clipTitle(title: string): string {
  return clipChars(title, MAX_TITLE_CHARS);
}

/** A title from the first non-empty line, shortened; the document's URL stands in when there is none. */
export function firstLineTitle(content: string, fallback: string): string {
  const line = content.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return clipTitle(line || fallback);
}

/** A plain-text document: its title is its first line. */
export function extractPlainText(text: string, url: string): { title: string; content: string } {
  const content = normaliseText(text);
  return { title: firstLineTitle(content, url), content };
}
