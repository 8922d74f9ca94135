import { randomUUID } from "node:crypto";
import { Schema, type Connection, type Model } from "mongoose";
import { HostLimiter } from "../../lib/host-limiter";
import type { SecretBox } from "../../lib/secrets";
import type { KnowledgeSourceRecord } from "../knowledge";
import { FetchError, type SafeFetchOptions } from "../../lib/safe-fetch";
import type { AddressPolicy } from "../../lib/address-policy";
import { ceilingMessage, createFetcher, READERS, type Fetcher, type ReaderContext, type ReaderDocument, type SourceReader, type UrlListState } from "./readers";
import { classifyPage, forgetPages, forgetSource, MISSING_LOADS_TO_PRUNE, pageHash, recordPages, settleLoad, sourcePages, type PageRecord, type PageUpdate } from "./registry";
import type { LoadCounts, LoadProgress, PageDoc, PageReader } from "./runner";

/** Requests one loader replica sends to one host at a time: polite to small sites, fast enough for big ones. */
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
  /** Sitemap <lastmod> per URL, when the sitemap gives any. */
  lastmods?: (string | null)[];
}
const urlListSchema = new Schema<UrlListRecord>(
  { _id: { type: String, required: true }, urls: { type: [String], default: [] }, lastmods: { type: [String], default: undefined } },
  { versionKey: false, collection: "load_job_urls" },
);

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
  /** Steps read so far. */
  steps?: number;
  /** The in-memory copy of the page registry that this progress's registry writes went through. */
  registry_copy?: string;
  finished: boolean;
  ceiling: { listed: number; skipped: number } | null;
  /** What the listing could not read (LoadPlan note), kept for loading_error. */
  listing_note?: string | null;
  /** The load these pages are marked with in the page registry (the job id, the same across windows). */
  load_id: string;
  /** A refresh: ask pages conditionally and leave unchanged ones out of the index call. */
  conditional: boolean;
  /** Whether the listing is the whole source; null for crawls until they end. */
  complete: boolean | null;
}

/** What the readers of one loader process share. */
interface ReaderSettings {
  /** The process's per-host limiter and the configured address policy. */
  fetchDefaults: Pick<SafeFetchOptions, "limiter" | "policy">;
  sitemapCeiling: number;
  secrets: SecretBox;
}

/** The loader's fetcher, noting pages that answered 404 or 410 (crawls skip those silently; pruning counts them). */
function watchedFetcher(defaults: ReaderSettings["fetchDefaults"], notFound: Set<string>): Fetcher {
  const fetch = createFetcher(defaults);
  return async (url, opts) => {
    try {
      return await fetch(url, opts);
    } catch (err) {
      if (err instanceof FetchError && (err.status === 404 || err.status === 410)) notFound.add(url);
      throw err;
    }
  };
}

/**
 * An upload source's "reader": nothing to list or read, and an incomplete listing, so a load (a preload or a refresh
 * queued anyway) keeps every document; uploaded documents leave only by their own DELETE or the source's
 * (docs/adr/0055-uploaded-documents.md).
 */
const uploadReader: SourceReader = {
  start: async () => ({ state: {}, total: 0, complete: false }),
  next: async () => ({ documents: [], failures: [], done: true }),
};

/** The reader of a source's data type. */
function readerOf(source: KnowledgeSourceRecord): SourceReader {
  return source.data_type === "upload" ? uploadReader : READERS[source.data_type];
}

/**
 * What a loaded page's document carries as metadata, as uploaded documents do (docs/adr/0055-uploaded-documents.md):
 * what an HTML page says of itself (language, description, keywords, author), where it came from, its URL and
 * title, and when the site says it last changed (Last-Modified, else the sitemap's lastmod). Not part of the index
 * key: a metadata-only change is written on its own (and into the index) when the page is read again.
 */
function pageMetadata(source: KnowledgeSourceRecord, d: Pick<ReaderDocument, "url" | "title" | "attributes" | "page">) {
  return { ...d.attributes, source: source.data_type, url: d.url, title: d.title, last_modified: d.page?.last_modified ?? d.page?.lastmod ?? null };
}

function readerContext(source: KnowledgeSourceRecord, settings: ReaderSettings, extra: Partial<ReaderContext> = {}): ReaderContext {
  return {
    fetch: createFetcher(settings.fetchDefaults),
    sitemapCeiling: settings.sitemapCeiling,
    wikiToken: source.credentials ? settings.secrets.open(source.credentials) : undefined,
    ...extra,
  };
}

/**
 * The pages a complete page list does not name are gone (the sitemap says so): their documents can go from the
 * first step on, while the rest is read, rather than at the end.
 */
function unlisted(p: ReaderProgress, source: KnowledgeSourceRecord, urls: string[], known: Map<string, PageRecord>) {
  if (!p.list_id || p.complete !== true || !(source.refresh?.prune ?? true)) return null;
  const { gone, forget } = settleLoad(known.values(), { loadId: p.load_id, listed: new Set(urls), complete: true });
  return { gone: [...new Set(gone)], forget };
}

/** A crawl's listing is complete when it ran out of links, not when a limit or robots.txt stopped it. */
function crawlComplete(state: Record<string, unknown>): boolean {
  return Array.isArray(state.queue) && state.queue.length === 0 && state.stopReason === undefined;
}

/** Pages read so far as the reader counts them (list position, crawl pages), else our tally. */
function pagesDone(progress: ReaderProgress): number {
  const { next, pagesRead } = progress.state as { next?: unknown; pagesRead?: unknown };
  if (progress.list_id && typeof next === "number") return next;
  if (typeof pagesRead === "number") return pagesRead;
  return progress.read;
}

/**
 * Connects the data-type readers to the loader's resumable windows, and compares what they read with the page
 * registry: unchanged pages are counted and (on a refresh) not indexed again, 404/410 streaks are counted for
 * pruning, and a finished load says which documents stay.
 */
export function createSourceReader(
  lists: Model<UrlListRecord>,
  registry: Model<PageRecord>,
  options: { perHostConcurrency: number; sitemapPageCeiling: number; addressPolicy: AddressPolicy },
  secrets: SecretBox,
): PageReader {
  // One limiter per loader process: requests to one host at the same time, across its loads.
  const fetchDefaults = { limiter: new HostLimiter(options.perHostConcurrency), policy: options.addressPolicy };
  const settings: ReaderSettings = { fetchDefaults, sitemapCeiling: options.sitemapPageCeiling, secrets };
  const cache = new Map<string, Pick<UrlListRecord, "urls" | "lastmods">>();
  const listOf = async (listId: string) => {
    let list = cache.get(listId);
    if (!list) {
      const stored = await lists.findById(listId).lean<UrlListRecord>();
      list = { urls: stored?.urls ?? [], ...(stored?.lastmods?.length ? { lastmods: stored.lastmods } : {}) };
      if (cache.size >= CACHED_LISTS) cache.delete(cache.keys().next().value!);
      cache.set(listId, list);
    }
    return list;
  };
  // The source's page registry, read once per job a loader runs and kept in step by recordPages (the loader that
  // holds the lease is its only writer). The progress names the copy its writes went through: another loader
  // that took the job over (and saved progress) names its own, and this one reads the registry again.
  const registries = new Map<string, { pages: Promise<Map<string, PageRecord>>; copy: string }>();
  const registryOf = (p: ReaderProgress, source: KnowledgeSourceRecord, pages?: Promise<Map<string, PageRecord>>) => {
    let entry = registries.get(p.load_id);
    if (!entry || entry.copy !== p.registry_copy) {
      const current = { pages: pages ?? sourcePages(registry, source), copy: randomUUID() };
      current.pages.catch(() => registries.get(p.load_id) === current && registries.delete(p.load_id));
      if (registries.size >= CACHED_LISTS) registries.delete(registries.keys().next().value!);
      registries.set(p.load_id, current);
      p.registry_copy = current.copy;
      entry = current;
    }
    return entry.pages;
  };

  return {
    async plan(source, load) {
      // The registry is read while the source is listed: the first step needs both.
      const known = sourcePages(registry, source);
      const plan = await readerOf(source).start(source.paths, readerContext(source, settings));
      const { urls, lastmods, ...state } = plan.state as { urls?: string[]; lastmods?: (string | null)[] };
      let listId: string | null = null;
      if (Array.isArray(urls)) {
        listId = randomUUID();
        const list = { urls, ...(lastmods ? { lastmods } : {}) };
        await lists.create({ _id: listId, ...list });
        cache.set(listId, list);
      }
      const kind = source.data_type === "discovery" ? "crawl" : source.data_type;
      const progress: ReaderProgress = {
        kind,
        state: Array.isArray(urls) ? state : (plan.state as Record<string, unknown>),
        list_id: listId,
        total: plan.total,
        read: 0,
        steps: 0,
        finished: plan.total === 0,
        ceiling: plan.ceiling ?? null,
        listing_note: plan.note ?? null,
        load_id: load.loadId,
        conditional: load.conditional,
        complete: plan.complete ?? (kind === "crawl" ? null : true),
      };
      registryOf(progress, source, known);
      return progress;
    },

    async next(progress, source, max) {
      const p = progress as ReaderProgress;
      const state = p.list_id ? { ...p.state, ...(await listOf(p.list_id)) } : p.state;
      const known = await registryOf(p, source);
      const notFound = new Set<string>();
      const previous = (url: string) => {
        const page = known.get(url);
        return p.conditional && page?.doc_url ? page : undefined;
      };
      const batch = await readerOf(source).next(state, readerContext(source, settings, { fetch: watchedFetcher(settings.fetchDefaults, notFound), previous }), max);
      if (p.list_id) {
        const { urls: _urls, lastmods: _lastmods, ...rest } = state as { urls?: string[]; lastmods?: unknown };
        p.state = rest;
      }
      p.read += batch.documents.length + batch.failures.length;
      p.steps = (p.steps ?? 0) + 1;
      p.finished = batch.done;

      const keyOf = (d: (typeof batch.documents)[number]) => d.page?.url ?? d.url;
      const counts: Partial<LoadCounts> = { new: 0, changed: 0, unchanged: batch.unchanged?.length ?? 0 };
      const updates = new Map<string, PageUpdate>();
      const docs: PageDoc[] = [];
      for (const d of batch.documents) {
        const hash = pageHash(d);
        const change = classifyPage(known.get(keyOf(d)), d, hash);
        counts[change]! += 1;
        const { etag = null, last_modified = null, lastmod = null, links } = d.page ?? {};
        updates.set(keyOf(d), { url: keyOf(d), doc_url: d.url, content_hash: hash, etag, last_modified, lastmod, ...(links ? { links } : {}), missing: 0 });
        if (change !== "unchanged" || !p.conditional) docs.push({ url: d.url, title: d.title, content: d.content, metadata: pageMetadata(source, d), ...(d.sections ? { sections: d.sections } : {}) });
      }
      for (const url of batch.unchanged ?? []) updates.set(url, { url, missing: 0 });
      // A failure keeps the page as it was (one bad answer proves nothing); a 404/410 extends its streak.
      for (const f of batch.failures) updates.set(f.url, { url: f.url });
      for (const url of notFound) updates.set(url, { url, missing: (known.get(url)?.missing ?? 0) + 1 });
      // A page gone for good is pruned at the end, not reported as a failure.
      const failures = batch.failures.filter((f) => (updates.get(f.url)?.missing ?? 0) < MISSING_LOADS_TO_PRUNE);
      // A crawl that could not read a page (or found a known page missing only once) did not follow its links:
      // what it did not reach may still be there, so it prunes nothing for not being listed.
      const unsure = [...notFound].some((url) => known.get(url)?.doc_url && updates.get(url)!.missing! < MISSING_LOADS_TO_PRUNE);
      if (p.complete === null && (failures.length || unsure)) p.complete = false;
      // Listed but no document (noindex, empty): its old document, if any, goes at the end.
      for (const url of batch.listed ?? []) if (!updates.has(url)) updates.set(url, { url, doc_url: null, content_hash: null, missing: 0 });

      if (p.finished && p.complete === null) p.complete = crawlComplete(p.state);
      const early = p.steps === 1 ? unlisted(p, source, (state as Partial<UrlListState>).urls ?? [], known) : null;
      if (early) counts.removed = early.gone.length;
      return {
        docs,
        failures: failures.map((f) => `${f.url}: ${f.error}`),
        counts,
        // A page list is the listing; crawls and wikis mark the pages they listed.
        settle: () => recordPages(registry, source, { loadId: p.load_id, mark: !p.list_id }, [...updates.values()], known),
        gone: early && { urls: early.gone, forget: () => forgetPages(registry, source, early.forget, known) },
      };
    },

    async survivors(progress, source) {
      const p = progress as ReaderProgress;
      const listed = p.list_id ? new Set((await listOf(p.list_id)).urls) : null;
      const known = await registryOf(p, source);
      const { keep, gone, forget } = settleLoad(known.values(), { loadId: p.load_id, listed, complete: p.complete === true });
      return { keep, gone, forget: () => forgetPages(registry, source, forget, known) };
    },

    forget(source) {
      return forgetSource(registry, source);
    },

    counts(progress) {
      const p = progress as ReaderProgress;
      const done = pagesDone(p);
      return {
        done,
        total: p.total ?? (p.finished ? done : null),
        finished: p.finished,
        note: [p.ceiling && ceilingMessage(p.total ?? done, p.ceiling.listed, p.ceiling.skipped, settings.sitemapCeiling), p.listing_note].filter(Boolean).join("; ") || null,
      };
    },

    async release(progress) {
      const { list_id: listId, load_id: loadId } = progress as ReaderProgress;
      registries.delete(loadId);
      if (!listId) return;
      cache.delete(listId);
      await lists.deleteOne({ _id: listId });
    },
  };
}
