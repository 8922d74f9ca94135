import { plainChunking, sameChunking, type ChunkingSettings } from "../../lib/search/chunking";
import { continueJob, earlierWriterRunning, finishJob, jobSource, saveProgress, setRechunkState, type LoadJobRecord } from "../knowledge";
import { waitAndRequeue, type LoadResult, type RunnerDeps } from "./runner";

/** Documents per warmChunking call: their new chunks are embedded within one call, well inside its timeout. */
export const WARM_PAGE_DOCUMENTS = 20;
/** How long a re-chunk waits for the source to name it before deciding the request that queued it failed. */
export const NAMING_WAIT_MS = 60_000;

/**
 * Whether a re-chunk's first window may start. The request that queues it saves the source just after (its new
 * chunking, and `rechunk` naming this job), so a job claimed before that save would cut with the settings being
 * replaced and end "done" without the change: it waits until the source names it. A source naming a job queued
 * since superseded it; one naming another for NAMING_WAIT_MS means the request failed after queueing it.
 */
export function rechunkStart(
  job: { _id: string; created_at: Date },
  named: { job_id: string; queued_at: Date } | null | undefined,
  now: number,
): "start" | "wait" | "superseded" | "unnamed" {
  if (named?.job_id === job._id) return "start";
  if (named && named.queued_at.getTime() > job.created_at.getTime()) return "superseded";
  return now - job.created_at.getTime() < NAMING_WAIT_MS ? "wait" : "unnamed";
}

/** Where a re-chunk stands (saved on the job after every page, so another loader resumes it). */
interface RechunkProgress {
  /** The source's chunking the job works towards (null: the deployment's default). */
  chunking: ChunkingSettings | null;
  phase: "warm" | "switch";
  /** The last document id warmed. */
  after: string | null;
  /** Documents warmed so far. */
  done: number;
}

/**
 * Runs one window of a re-chunk job (docs/adr/0059-chunking-per-source.md): phase 1 warms the embedding cache
 * with the new chunks' vectors a page of documents at a time (searches still answer from the old chunks), phase 2
 * swaps the source's chunks in one index change. A job starts once its source names it (rechunkStart), and one whose
 * source's chunking changed again since it began ends at once: the change queued a successor, which starts from the
 * latest settings once this one has stopped.
 */
export async function runRechunkWindow(deps: RunnerDeps, job: LoadJobRecord): Promise<LoadResult> {
  const source = await jobSource(deps.sources, job);
  if (!source || source.deleting) {
    await finishJob(deps.jobs, job, deps.owner, { status: "done", error: "source deleted" });
    return "finished";
  }
  const saved = job.progress as Partial<RechunkProgress> | null;
  const start = saved?.phase ? (sameChunking(saved.chunking, source.chunking) ? "start" : "superseded") : rechunkStart(job, source.rechunk, Date.now());
  if (start === "wait" || (await earlierWriterRunning(deps.jobs, job))) return waitAndRequeue(deps, job);
  if (start !== "start") {
    const error = start === "superseded" ? "superseded by a later chunking change" : "no chunking change of the source names this job";
    await finishJob(deps.jobs, job, deps.owner, { status: "done", error });
    return "finished";
  }
  let progress: RechunkProgress = saved?.phase ? (saved as RechunkProgress) : { chunking: plainChunking(source.chunking), phase: "warm", after: null, done: 0 };
  if (!saved?.phase) await setRechunkState(deps.sources, job, { status: "running", documents_done: 0, documents_total: source.document_count });
  const deadline = Date.now() + deps.windowMs;
  const { account_id: accountId, _id: sourceId } = source;
  try {
    while (progress.phase === "warm") {
      if (!deps.holdsLease()) return "lost";
      if (Date.now() > deadline) return (await continueJob(deps.jobs, job, deps.owner, progress)) ? "continued" : "lost";
      const { next, documents } = await deps.warmChunking(accountId, sourceId, progress.chunking, progress.after, WARM_PAGE_DOCUMENTS);
      progress = { ...progress, after: next, phase: next === null ? "switch" : "warm", done: progress.done + documents };
      if (!(await saveProgress(deps.jobs, job, deps.owner, progress))) return "lost";
      await setRechunkState(deps.sources, job, { status: "running", documents_done: progress.done });
    }
    if (!deps.holdsLease()) return "lost";
    await deps.switchChunking(accountId, sourceId, progress.chunking);
  } catch (err) {
    const error = `Re-chunking stopped: ${(err as Error).message}; searches answer from the previous chunks`;
    await deps.recordSourceChange(job, "knowledge_source.updated", () => setRechunkState(deps.sources, job, { status: "failed", finished_at: new Date(), error }));
    await finishJob(deps.jobs, job, deps.owner, { status: "failed", error });
    return "finished";
  }
  await deps.recordSourceChange(job, "knowledge_source.updated", () => setRechunkState(deps.sources, job, { status: "done", finished_at: new Date(), error: null }));
  return (await finishJob(deps.jobs, job, deps.owner, { status: "done" })) ? "finished" : "lost";
}
