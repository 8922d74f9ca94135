import { effectiveChunking, sameChunking, type ChunkingSettings } from "../../lib/search/chunking";
import type { KnowledgeSourceRecord, LoadJobRecord, LoadReport, RechunkStatus } from "./model";

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

/** The last_refresh of a finished load, from its job and the counts its progress kept. */
export function loadReport(
  job: Pick<LoadJobRecord, "_id" | "trigger" | "created_at">,
  progress: { counts?: Partial<Record<"new" | "changed" | "unchanged" | "failed", number>>; started_at?: number } | null,
  end: { status: LoadReport["status"]; removed: number; now?: Date },
): LoadReport {
  const finished = end.now ?? new Date();
  const started = new Date(progress?.started_at ?? job.created_at ?? finished);
  const counts = progress?.counts ?? {};
  return {
    job_id: job._id,
    trigger: job.trigger ?? "manual",
    status: end.status,
    started_at: started,
    finished_at: finished,
    duration_ms: finished.getTime() - started.getTime(),
    new: counts.new ?? 0,
    changed: counts.changed ?? 0,
    unchanged: counts.unchanged ?? 0,
    removed: end.removed,
    failed: counts.failed ?? 0,
  };
}

/**
 * Whether a chunking update re-chunks the source's stored documents: when the settings in effect change (a source
 * without its own has the deployment's), or when the last re-chunk failed (giving chunking again retries it).
 */
export function rechunkNeeded(
  before: ChunkingSettings | null,
  after: ChunkingSettings | null,
  last: RechunkStatus | null | undefined,
  deployment: { chunkSize: number; chunkOverlap: number },
): boolean {
  return !sameChunking(effectiveChunking(before, deployment), effectiveChunking(after, deployment)) || last === "failed";
}
