import { HostLimiter } from "../../lib/safe-fetch";
import { openSecret } from "../../lib/secrets";
import type { KnowledgeSourceRecord } from "../knowledge/model";
import { ceilingMessage, createFetcher, READERS, type ReaderContext } from "./readers";
import type { LoadProgress, PageReader } from "./runner";

/** Requests one loader replica sends to one host at a time: polite to small sites, fast enough for big ones. */
const PER_HOST_CONCURRENCY = Number(process.env.LOAD_PER_HOST_CONCURRENCY) || 8;
const limiter = new HostLimiter(PER_HOST_CONCURRENCY);

/** Saved with the job: the data type's reader state plus what the loader reports from it. */
interface ReaderProgress extends LoadProgress {
  state: unknown;
  total: number | null;
  read: number;
  finished: boolean;
  ceiling: { listed: number; skipped: number } | null;
}

function readerContext(source: KnowledgeSourceRecord): ReaderContext {
  return {
    fetch: createFetcher({ limiter }),
    wikiToken: source.credentials ? openSecret(source.credentials) : undefined,
  };
}

/** Pages read so far as the reader counts them (list position, crawl pages, wiki offset), else our tally. */
function pagesDone(progress: ReaderProgress): number {
  const state = progress.state as { next?: unknown; pagesRead?: unknown };
  if (typeof state.next === "number" && Array.isArray((state as { urls?: unknown }).urls)) return state.next;
  if (typeof state.pagesRead === "number") return state.pagesRead;
  return progress.read;
}

/** Connects the data-type readers to the loader's resumable windows. */
export const sourceReader: PageReader = {
  async plan(source) {
    const plan = await READERS[source.data_type].start(source.paths, readerContext(source));
    const progress: ReaderProgress = {
      kind: source.data_type === "discovery" ? "crawl" : source.data_type,
      state: plan.state,
      total: plan.total,
      read: 0,
      finished: plan.total === 0,
      ceiling: plan.ceiling ?? null,
    };
    return progress;
  },

  async next(progress, source, max) {
    const p = progress as ReaderProgress;
    const batch = await READERS[source.data_type].next(p.state, readerContext(source), max);
    p.read += batch.documents.length + batch.failures.length;
    p.finished = batch.done;
    return {
      docs: batch.documents.map((d) => ({ url: d.url, title: d.title, content: d.content })),
      failures: batch.failures.map((f) => `${f.url}: ${f.error}`),
    };
  },

  counts(progress) {
    const p = progress as ReaderProgress;
    const done = pagesDone(p);
    return {
      done,
      total: p.total ?? (p.finished ? done : null),
      finished: p.finished,
      note: p.ceiling ? ceilingMessage(p.total ?? done, p.ceiling.listed, p.ceiling.skipped) : null,
    };
  },
};
