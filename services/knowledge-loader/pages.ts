import { randomUUID } from "node:crypto";
import { Schema, type Connection, type Model } from "mongoose";
import { HostLimiter } from "../../lib/safe-fetch";
import { openSecret } from "../../lib/secrets";
import type { KnowledgeSourceRecord } from "../knowledge/model";
import { ceilingMessage, createFetcher, READERS, type ReaderContext } from "./readers";
import type { LoadProgress, PageReader } from "./runner";

/** Requests one loader replica sends to one host at a time: polite to small sites, fast enough for big ones. */
const PER_HOST_CONCURRENCY = Number(process.env.LOAD_PER_HOST_CONCURRENCY) || 8;
const limiter = new HostLimiter(PER_HOST_CONCURRENCY);
/** Page lists a loader keeps in memory (one per job it runs in a row). */
const CACHED_LISTS = 4;

/**
 * Page lists (up to 10,000 URLs) are stored once, beside the job, not inside its progress: the job document
 * is rewritten after every batch and read on every lease renewal, and the local MongoDB-compatible server
 * pays for the whole document each time.
 */
interface UrlListRecord {
  _id: string;
  urls: string[];
}
const urlListSchema = new Schema<UrlListRecord>({ _id: { type: String, required: true }, urls: { type: [String], default: [] } }, { versionKey: false, collection: "load_job_urls" });

/** The page lists model on a given connection. */
export function urlListModel(db: Connection): Model<UrlListRecord> {
  return (db.models.LoadJobUrls as Model<UrlListRecord>) ?? db.model<UrlListRecord>("LoadJobUrls", urlListSchema);
}

/** Saved with the job: the data type's reader state plus what the loader reports from it. */
interface ReaderProgress extends LoadProgress {
  state: Record<string, unknown>;
  /** Where the state's `urls` live when they were moved out of it. */
  list_id: string | null;
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

/** Pages read so far as the reader counts them (list position, crawl pages), else our tally. */
function pagesDone(progress: ReaderProgress): number {
  const { next, pagesRead } = progress.state as { next?: unknown; pagesRead?: unknown };
  if (progress.list_id && typeof next === "number") return next;
  if (typeof pagesRead === "number") return pagesRead;
  return progress.read;
}

/** Connects the data-type readers to the loader's resumable windows. */
export function createSourceReader(lists: Model<UrlListRecord>): PageReader {
  const cache = new Map<string, string[]>();
  const urlsOf = async (listId: string) => {
    let urls = cache.get(listId);
    if (!urls) {
      urls = (await lists.findById(listId).lean<UrlListRecord>())?.urls ?? [];
      if (cache.size >= CACHED_LISTS) cache.delete(cache.keys().next().value!);
      cache.set(listId, urls);
    }
    return urls;
  };

  return {
    async plan(source) {
      const plan = await READERS[source.data_type].start(source.paths, readerContext(source));
      const { urls, ...state } = plan.state as { urls?: string[] };
      let listId: string | null = null;
      if (Array.isArray(urls)) {
        listId = randomUUID();
        await lists.create({ _id: listId, urls });
        cache.set(listId, urls);
      }
      const progress: ReaderProgress = {
        kind: source.data_type === "discovery" ? "crawl" : source.data_type,
        state: Array.isArray(urls) ? state : (plan.state as Record<string, unknown>),
        list_id: listId,
        total: plan.total,
        read: 0,
        finished: plan.total === 0,
        ceiling: plan.ceiling ?? null,
      };
      return progress;
    },

    async next(progress, source, max) {
      const p = progress as ReaderProgress;
      const state = p.list_id ? { ...p.state, urls: await urlsOf(p.list_id) } : p.state;
      const batch = await READERS[source.data_type].next(state, readerContext(source), max);
      if (p.list_id) {
        const { urls: _urls, ...rest } = state as { urls?: string[] };
        p.state = rest;
      }
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

    async release(progress) {
      const listId = (progress as ReaderProgress).list_id;
      if (!listId) return;
      cache.delete(listId);
      await lists.deleteOne({ _id: listId });
    },
  };
}
