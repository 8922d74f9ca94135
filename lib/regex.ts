/** Escapes user text for use inside a regular expression (directory and collected-data search). */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
