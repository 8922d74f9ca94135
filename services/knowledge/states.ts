import type { KnowledgeSourceRecord, LoadingStatus } from "./model";

/** The page ceiling of sitemap sources. */
export const SITEMAP_PAGE_CEILING = 10_000;

type SourceState = Pick<KnowledgeSourceRecord, "loading_status">;
export type SourceChanges = Partial<Omit<KnowledgeSourceRecord, "_id" | "account_id">>;

/** What a preload request does, by current status (the interface's table plus sensible answers for the rest). */
export function preloadDecision(source: SourceState, force: boolean): "queue" | "already-loading" | "already-loaded" {
  switch (source.loading_status) {
    case "loading":
      return "already-loading";
    case "loaded":
      return force ? "queue" : "already-loaded";
    default:
      return "queue";
  }
}

/** A load window starts: the source is loading and a previous error is cleared. */
export function loadStarted(firstWindow: boolean): SourceChanges {
  return firstWindow
    ? { loading_status: "loading", loading_error: null, loading_urls_done: 0, loading_urls_total: null }
    : { loading_status: "loading" };
}

/** How a load that stopped ends, from what it indexed: the interface's loaded/partial/failed rules. */
export function loadOutcome(result: {
  complete: boolean;
  documentCount: number;
  error: string | null;
  now?: Date;
}): SourceChanges {
  const now = result.now ?? new Date();
  if (result.complete && !result.error) {
    return { loading_status: "loaded", loaded_at: now, loading_error: null };
  }
  const status: LoadingStatus = result.documentCount > 0 ? "partial" : "failed";
  return { loading_status: status, loading_error: result.error ?? "The load stopped before reading every page" };
}

/** The loading_error text of a sitemap that lists more pages than the ceiling. */
export function ceilingMessage(listed: number, read = SITEMAP_PAGE_CEILING): string {
  return `Sitemap lists ${listed} pages; read ${read} of ${listed} (page ceiling ${SITEMAP_PAGE_CEILING}), skipped ${listed - read}`;
}
