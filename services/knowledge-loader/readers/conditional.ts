import type { PageValidators } from "./types";

/** Request headers that ask for a page only if it changed since the validators were taken. */
export function conditionalHeaders(known: PageValidators | undefined): Record<string, string> | undefined {
  if (!known?.etag && !known?.last_modified) return undefined;
  return { ...(known.etag ? { "if-none-match": known.etag } : {}), ...(known.last_modified ? { "if-modified-since": known.last_modified } : {}) };
}
