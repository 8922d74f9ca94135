import type { KnowledgeSourceRecord } from "./model";

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
}): SourceChanges & { loading_status: "loaded" | "partial" | "failed" } {
  const now = result.now ?? new Date();
  if (result.complete && !result.error) {
    return { loading_status: "loaded", loaded_at: now, loading_error: null };
  }
  const status = result.documentCount > 0 ? "partial" : "failed";
  return { loading_status: status, loading_error: result.error ?? "The load stopped before reading every page" };
}
