import type { Model } from "mongoose";
import { plainChunking, type ChunkingSettings } from "../../lib/search/chunking";
import {
  cancelPendingLoads,
  continueJob,
  earlierWriterRunning,
  finishJob,
  jobSource,
  loadOutcome,
  loadReport,
  loadStarted,
  releaseJob,
  removeSourceRecord,
  saveProgress,
  setLoadingState,
  setLoadProgress,
  type KnowledgeSourceRecord,
  type LoadJobRecord,
} from "../knowledge";

/** One document ready for the index: a page, file or wiki page of the source. */
export interface PageDoc {
  url: string;
  title: string;
  content: string;
  metadata?: Record<string, unknown>;
  /** Offsets into content where a heading begins (the `heading` chunking's section marks). */
  sections?: number[];
}

/** Where a load stands; plain JSON, saved on the job after every batch so another loader can resume it. */
export type LoadProgress = Record<string, unknown> & { kind: string };

/** What a load did to the source's pages (reported in last_refresh and knowledge_source.refreshed). */
export interface LoadCounts {
  new: number;
  changed: number;
  unchanged: number;
  removed: number;
  failed: number;
}

/** Reads a source in resumable steps; one implementation per family of data types. */
export interface PageReader {
  /**
   * First window only: what to read (page list, crawl frontier, wiki cursor). Throws when listing fails.
   * `conditional`: a refresh, which asks pages conditionally and leaves unchanged ones out of `docs`.
   */
  plan(source: KnowledgeSourceRecord, load: { loadId: string; conditional: boolean }): Promise<LoadProgress>;
  /**
   * Reads up to `max` further pages, advancing `progress` in place; failed pages are reported, not thrown.
   * `settle` records what the batch learnt of its pages; call it once the documents are indexed.
   * `gone`: documents known to be pruned already (of pages a complete listing does not name), and how to forget
   * their pages once the documents are out of the index; until then the end of the load would prune them again.
   */
  next(
    progress: LoadProgress,
    source: KnowledgeSourceRecord,
    max: number,
  ): Promise<{ docs: PageDoc[]; failures: string[]; counts: Partial<LoadCounts>; settle(): Promise<void>; gone: { urls: string[]; forget(): Promise<void> } | null }>;
  /**
   * At the end of a load: the document URLs that stay (null: keep all but `gone`), those that must go, and how to
   * forget the pruned pages once their documents are out of the index.
   */
  survivors(progress: LoadProgress, source: KnowledgeSourceRecord): Promise<{ keep: Set<string> | null; gone: string[]; forget(): Promise<void> }>;
  /** Forgets every page of a deleted source. */
  forget(source: { account_id: number; _id: number }): Promise<void>;
  /** Pages read and known, whether nothing is left, and a note for loading_error (e.g. the sitemap ceiling). */
  counts(progress: LoadProgress): { done: number; total: number | null; finished: boolean; note: string | null };
  /** Drops what the load stored beside its progress, once it has ended. */
  release(progress: LoadProgress): Promise<void>;
}

export interface RunnerDeps {
  sources: Model<KnowledgeSourceRecord>;
  jobs: Model<LoadJobRecord>;
  reader: PageReader;
  /** Sends documents to the search service (chunked by the source's settings, embedded and indexed there). */
  index(accountId: number, sourceId: number, docs: PageDoc[], chunking: ChunkingSettings | null): Promise<void>;
  /** A re-chunk's phase 1: a page of the source's documents, their new chunks' vectors cached; the next page's start. */
  warmChunking(accountId: number, sourceId: number, chunking: ChunkingSettings | null, after: string | null, limit: number): Promise<{ next: string | null; documents: number }>;
  /** A re-chunk's phase 2: the source's documents re-indexed under the settings in one index change. */
  switchChunking(accountId: number, sourceId: number, chunking: ChunkingSettings | null): Promise<void>;
  /** Documents the index holds for the source: the truth for document_count. */
  count(accountId: number, sourceId: number): Promise<number>;
  deleteSourceDocuments(accountId: number, sourceId: number): Promise<void>;
  /** URLs of the documents the index holds for the source. */
  documentUrls(accountId: number, sourceId: number): Promise<string[]>;
  /** Removes the source's documents at these URLs from the index (chunks and records). */
  removeDocuments(accountId: number, sourceId: number, urls: string[]): Promise<number>;
  /**
   * Records a change of the job's source with its event (knowledge_source.loaded, .partial, .failed when a load
   * ends, then .refreshed after a reload; .deleted): `write` makes the change, the event carries the source as the API shows it after it.
   */
  recordSourceChange(job: LoadJobRecord, type: string, write: () => Promise<void>): Promise<void>;
  owner: string;
  windowMs: number;
  maxWindows: number;
  batchSize: number;
  /** False once the lease was lost (another loader took the job over): stop without writing. */
  holdsLease(): boolean;
}

export type LoadResult = "finished" | "continued" | "lost";

/** How long a job waits for an earlier writer of its source (a re-chunk: for its source to name it) before it goes back to the queue. */
const WAIT_FOR_EARLIER_MS = 1_000;

/** Waits a moment, then gives the job back to the queue as it stands (its window and progress kept). */
export async function waitAndRequeue(deps: RunnerDeps, job: LoadJobRecord): Promise<LoadResult> {
  await new Promise((r) => setTimeout(r, WAIT_FOR_EARLIER_MS));
  await releaseJob(deps.jobs, job, deps.owner);
  return "continued";
}

/** Kept in progress beside the reader's state: failed pages for loading_error, the counts, and when the load began. */
interface FailureTally {
  failed?: number;
  last_failure?: string | null;
  counts?: Partial<LoadCounts>;
  started_at?: number;
  /** The source had been loaded before: the end also announces knowledge_source.refreshed. */
  reload?: boolean;
}

function describeFailures(progress: FailureTally): string | null {
  if (!progress.failed) return null;
  return `${progress.failed} page(s) could not be read; last: ${progress.last_failure ?? "unknown error"}`;
}

/**
 * Pages a refresh (a reload that is not forced) reads per step: it mostly finds nothing to index, so bigger steps
 * spread the per-step costs (index call, registry write, progress save) over more unchanged pages. At most one
 * index call's worth (search.indexDocuments takes 500 documents), for a refresh that finds everything changed.
 */
const REFRESH_STEP_PAGES = 500;

function pagesPerStep(deps: RunnerDeps, job: LoadJobRecord, progress: FailureTally): number {
  return progress.reload && !job.force ? Math.max(deps.batchSize, REFRESH_STEP_PAGES) : deps.batchSize;
}

/** Thrown inside a window when another loader has taken the job over: stop without writing. */
class LeaseLost extends Error {}
/** Thrown inside a window when the source's deletion was queued: its documents go, and the load stops. */
class SourceDeleted extends Error {}

interface ReadBatch {
  docs: PageDoc[];
  failures: string[];
  gone: { urls: string[]; forget(): Promise<void> } | null;
  settle(): Promise<void>;
  /** Progress as it stood right after this batch was read (later reads advance the live object). */
  after: LoadProgress & FailureTally;
}

/**
 * Reads and indexes batches until the budget is spent or nothing is left, reading the next batch while the
 * current one is indexed (fetching waits on the network, indexing on the search service; overlapping them
 * keeps both busy). Progress saved after a batch is the copy taken when that batch was read, so a crash never
 * records pages as done that were read but not indexed. Returns the progress of the last saved batch.
 */
async function readAndIndex(
  deps: RunnerDeps,
  job: LoadJobRecord,
  source: KnowledgeSourceRecord,
  progress: LoadProgress & FailureTally,
  deadline: number,
): Promise<LoadProgress & FailureTally> {
  const live = progress;
  const more = () => Date.now() < deadline && !deps.reader.counts(live).finished && deps.holdsLease();
  const read = async (): Promise<ReadBatch> => {
    const { docs, failures, counts, gone, settle } = await deps.reader.next(live, source, pagesPerStep(deps, job, live));
    if (failures.length) {
      live.failed = (live.failed ?? 0) + failures.length;
      live.last_failure = failures[failures.length - 1];
    }
    live.counts = addCounts(live.counts, { ...counts, failed: failures.length });
    return { docs, failures, gone, settle, after: structuredClone(live) };
  };
  let saved = structuredClone(live);
  let next = more() ? read() : null;
  // Known-gone documents are removed beside the steps, not in their way; the load's end waits for it.
  let pruning: Promise<unknown> = Promise.resolve();
  const pruned = new Set<string>();
  while (next) {
    const batch = await next;
    next = more() ? read() : null;
    // A read started here must not be left unawaited if indexing below throws.
    next?.catch(() => undefined);
    if (!deps.holdsLease()) throw new LeaseLost();
    if (batch.gone) {
      const { urls, forget } = batch.gone;
      for (const url of urls) pruned.add(url);
      pruning = Promise.all([pruning, deps.removeDocuments(source.account_id, source._id, urls).then(forget)]);
      pruning.catch(() => undefined);
    }
    // A page that now yields a pruned document's URL (its canonical moved there) is indexed after the removal.
    if (batch.docs.some((d) => pruned.has(d.url))) await pruning;
    if (batch.docs.length) await deps.index(source.account_id, source._id, batch.docs, plainChunking(source.chunking));
    await batch.settle();
    if (!(await saveProgress(deps.jobs, job, deps.owner, batch.after))) throw new LeaseLost();
    saved = batch.after;
    const { done, total } = deps.reader.counts(saved);
    // document_count is what search finds: the batch's documents are searchable now, not only at the window's end.
    const indexed = batch.docs.length ? { last_indexed_at: new Date(), document_count: await deps.count(source.account_id, source._id) } : {};
    if (!(await setLoadProgress(deps.sources, job, { loading_urls_done: done, loading_urls_total: total, ...indexed }))) {
      // The deletion's purge may have run before this batch was indexed: remove the source's documents again.
      await pruning;
      await deps.deleteSourceDocuments(source.account_id, source._id);
      await deps.reader.forget(source);
      throw new SourceDeleted();
    }
  }
  await pruning;
  return saved;
}

/**
 * Runs one window of a load job: plans on the first window, reads pages in batches until the budget is
 * spent or nothing is left, saves progress after every batch, then finishes the source (loaded, partial,
 * failed) or re-queues the job as its own continuation. document_count is re-read from the index.
 */
export async function runLoadWindow(deps: RunnerDeps, job: LoadJobRecord): Promise<LoadResult> {
  const source = await jobSource(deps.sources, job);
  if (!source || source.deleting) {
    await finishJob(deps.jobs, job, deps.owner, { status: "done", error: "source deleted" });
    return "finished";
  }
  if (await earlierWriterRunning(deps.jobs, job)) return waitAndRequeue(deps, job);
  const started = Date.now();
  const deadline = started + deps.windowMs;
  const fresh = !job.progress;
  await setLoadingState(deps.sources, job, loadStarted(fresh && job.window === 1));

  let progress: LoadProgress & FailureTally;
  try {
    progress = (job.progress as LoadProgress) ?? {
      ...(await deps.reader.plan(source, { loadId: job._id, conditional: !job.force })),
      started_at: started,
      reload: source.loaded_at !== null || source.last_refresh !== null,
    };
    if (fresh && !(await saveProgress(deps.jobs, job, deps.owner, progress))) return "lost";
    // Known once the listing is read (a sitemap's pages), not only after the first batch.
    if (fresh) await setLoadingState(deps.sources, job, { loading_urls_total: deps.reader.counts(progress).total });
  } catch (err) {
    return finish(deps, job, null, { complete: false, error: `Could not list the source: ${(err as Error).message}` });
  }

  try {
    progress = await readAndIndex(deps, job, source, progress, deadline);
  } catch (err) {
    if (err instanceof LeaseLost) return "lost";
    if (err instanceof SourceDeleted) {
      await finishJob(deps.jobs, job, deps.owner, { status: "done", error: "source deleted" });
      await deps.reader.release(progress);
      return "finished";
    }
    // The index or the database failed mid-window: keep what was indexed, say why it stopped.
    return finish(deps, job, progress, { complete: false, error: `Load interrupted: ${(err as Error).message}` });
  }

  const counts = deps.reader.counts(progress);
  if (counts.finished) {
    const error = [counts.note, describeFailures(progress)].filter(Boolean).join("; ") || null;
    return finish(deps, job, progress, { complete: true, error, emptyIsFailure: progress.kind === "crawl" });
  }
  if (job.window >= deps.maxWindows) {
    return finish(deps, job, progress, {
      complete: false,
      error: `Ran out of load windows (${deps.maxWindows} of ${Math.round(deps.windowMs / 1000)} s) after ${counts.done} pages`,
    });
  }
  const documentCount = await deps.count(source.account_id, source._id);
  await setLoadingState(deps.sources, job, { document_count: documentCount });
  return (await continueJob(deps.jobs, job, deps.owner, progress)) ? "continued" : "lost";
}

function addCounts(a: Partial<LoadCounts> = {}, b: Partial<LoadCounts>): Partial<LoadCounts> {
  const sum: Partial<LoadCounts> = { ...a };
  for (const [key, n] of Object.entries(b) as [keyof LoadCounts, number | undefined][]) if (n) sum[key] = (sum[key] ?? 0) + n;
  return sum;
}

/**
 * Prunes a load that read its whole listing: documents of pages it did not list (when the listing was
 * complete) or that answered 404/410 loads in a row go from the index, then from the page registry.
 */
async function prune(deps: RunnerDeps, source: KnowledgeSourceRecord, progress: LoadProgress): Promise<number> {
  const { keep, gone, forget } = await deps.reader.survivors(progress, source);
  let removed = gone.length ? await deps.removeDocuments(source.account_id, source._id, gone) : 0;
  // The index may hold more than the registry knows (documents from before it, a page whose canonical URL moved):
  // when its count says so, its own list decides.
  if (keep && (await deps.count(source.account_id, source._id)) !== keep.size) {
    const strays = (await deps.documentUrls(source.account_id, source._id)).filter((url) => !keep.has(url));
    if (strays.length) removed += await deps.removeDocuments(source.account_id, source._id, strays);
  }
  await forget();
  return removed;
}

/** Ends a load: pruning, document_count from the index, then the interface's final state and last_refresh. */
async function finish(
  deps: RunnerDeps,
  job: LoadJobRecord,
  progress: (LoadProgress & FailureTally) | null,
  result: { complete: boolean; error: string | null; emptyIsFailure?: boolean },
): Promise<LoadResult> {
  const source = await jobSource(deps.sources, job);
  let removed = 0;
  if (source && progress && result.complete && (source.refresh?.prune ?? true)) removed = await prune(deps, source, progress);
  const documentCount = await deps.count(job.account_id, job.knowledge_source_id);
  const error = result.complete && result.emptyIsFailure && documentCount === 0 ? ["The crawl indexed no documents", result.error].filter(Boolean).join("; ") : result.error;
  const outcome = loadOutcome({ complete: result.complete, documentCount, error });
  const last_refresh = loadReport(job, progress, { status: outcome.loading_status, removed: removed + (progress?.counts?.removed ?? 0) });
  await deps.recordSourceChange(job, `knowledge_source.${outcome.loading_status}`, () => setLoadingState(deps.sources, job, { ...outcome, document_count: documentCount, last_refresh }));
  await finishJob(deps.jobs, job, deps.owner, { status: outcome.loading_status === "failed" ? "failed" : "done", error: outcome.loading_error ?? null });
  if (progress) await deps.reader.release(progress);
  const reload = progress?.reload ?? (source !== null && (source.loaded_at !== null || source.last_refresh !== null));
  // The counts are in the source's last_refresh, written above: the event carries the source as it is now.
  if (reload) await deps.recordSourceChange(job, "knowledge_source.refreshed", async () => undefined);
  return "finished";
}

/** Deletes a source: cancels its loads, removes its documents from the index, then the record. */
export async function runDeleteSource(deps: RunnerDeps, job: LoadJobRecord): Promise<void> {
  await cancelPendingLoads(deps.jobs, job);
  await deps.deleteSourceDocuments(job.account_id, job.knowledge_source_id);
  await deps.reader.forget({ account_id: job.account_id, _id: job.knowledge_source_id });
  await deps.recordSourceChange(job, "knowledge_source.deleted", async () => {
    await removeSourceRecord(deps.sources, job);
  });
  await finishJob(deps.jobs, job, deps.owner, { status: "done" });
}
