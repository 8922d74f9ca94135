import { createHash } from "node:crypto";
import type { Model } from "mongoose";
import { insertNew } from "../../lib/db";
import { defineModel, stored } from "../../lib/storage";
import type { ReaderDocument } from "./readers";

/** Consecutive 404/410 answers after which a page is taken as gone (one may be a deploy or a CDN hiccup). */
export const MISSING_LOADS_TO_PRUNE = 2;

/**
 * What the loader knows of one page of a source across loads: the document it became, its content hash and
 * the validators to ask for it conditionally, how many loads in a row found it missing, and the last load
 * that listed it (a complete load prunes the pages it did not list). A KnownPage (readers/types.ts), as stored.
 */
const pages = defineModel(
  {
    /** pageId(source, url): every read and write of one page is a key lookup (the local server scans on other fields). */
    _id: { store: stored.string({ required: true }) },
    account_id: { store: stored.int({ required: true }) },
    source_id: { store: stored.int({ required: true, ref: "knowledge_sources" }) },
    /** The page as listed or crawled (the key); the document URL may differ after a redirect or rel=canonical. */
    url: { store: stored.string({ required: true }) },
    doc_url: { store: stored.string({ default: null }) },
    content_hash: { store: stored.string({ default: null }) },
    etag: { store: stored.string({ default: null }) },
    last_modified: { store: stored.string({ default: null }) },
    lastmod: { store: stored.string({ default: null }) },
    // Crawls only: absent for list readers' pages.
    links: { store: stored.custom<string[] | null, true>({ type: [String], default: undefined }, { type: "array", items: { type: "string" } }, true) },
    missing: { store: stored.int({ default: 0 }) },
    load_id: { store: stored.string({ required: true }) },
    updated_at: { store: stored.date({ default: () => new Date() }) },
  },
  { name: "KnowledgePage", plain: true, collection: "knowledge_pages", indexes: [[{ account_id: 1, source_id: 1, url: 1 }, { unique: true }]] },
);
export type PageRecord = typeof pages.record;

/** The page registry model on a given connection. */
export const pageRegistryModel = pages.model;

type SourceKey = { account_id: number; _id: number };

/** The registry key of a page of a source. */
export function pageId(source: SourceKey, url: string): string {
  return createHash("sha256").update(`${source.account_id}\u0000${source._id}\u0000${url}`).digest("base64url").slice(0, 32);
}

/** Fingerprint of what a page contributes to the index (title and text): equal means nothing to re-index. */
export function pageHash(doc: Pick<ReaderDocument, "title" | "content">): string {
  return createHash("sha256").update(doc.title).update("\u0000").update(doc.content).digest("base64url").slice(0, 32);
}

/** How a page read in this load compares with what the previous loads indexed. */
export type PageChange = "new" | "changed" | "unchanged";

export function classifyPage(known: Pick<PageRecord, "doc_url" | "content_hash"> | undefined, doc: ReaderDocument, hash: string): PageChange {
  if (!known?.doc_url) return "new";
  return known.content_hash === hash && known.doc_url === doc.url ? "unchanged" : "changed";
}

/** Every registry entry of a source, by page URL (read once per load window: one query, at most ~10,000 small rows). */
export async function sourcePages(pages: Model<PageRecord>, source: SourceKey): Promise<Map<string, PageRecord>> {
  const rows = await pages.find({ account_id: source.account_id, source_id: source._id }).lean<PageRecord[]>();
  return new Map(rows.map((r) => [r.url, r]));
}

/** A page's new registry fields after a load read it (only the fields given change). */
export type PageUpdate = { url: string } & Partial<Pick<PageRecord, "doc_url" | "content_hash" | "etag" | "last_modified" | "lastmod" | "links" | "missing">>;

const NEW_PAGE = { doc_url: null, content_hash: null, etag: null, last_modified: null, lastmod: null, missing: 0 };

/**
 * Writes what a batch learnt in at most three commands: new pages inserted at once, one update each for pages
 * whose fields changed, and, when `mark` is set (crawls, whose listing is not kept), the listed-by-this-load mark
 * of the unchanged rest at once. A page list's loads need no mark: the list is the listing. `known` (the
 * source's entries, as sourcePages read them) is updated to match.
 */
export async function recordPages(
  pages: Model<PageRecord>,
  source: SourceKey,
  load: { loadId: string; mark: boolean },
  updates: PageUpdate[],
  known: Map<string, PageRecord>,
): Promise<void> {
  const now = new Date();
  const scope = { account_id: source.account_id, source_id: source._id };
  const stamp = { load_id: load.loadId, updated_at: now };
  const fresh: PageRecord[] = [];
  const marked: string[] = [];
  const edited: { url: string; fields: Record<string, unknown> }[] = [];
  for (const { url, ...fields } of updates) {
    const page = known.get(url);
    if (!page) fresh.push({ _id: pageId(source, url), ...scope, ...NEW_PAGE, ...fields, url, ...stamp });
    else {
      const changed = Object.fromEntries(Object.entries(fields).filter(([key, value]) => !sameField(page[key as keyof PageRecord], value)));
      if (Object.keys(changed).length) edited.push({ url, fields: changed });
      else if (load.mark && page.load_id !== load.loadId) marked.push(url);
    }
  }
  const upsert = (url: string, fields: Record<string, unknown>) => ({
    updateOne: { filter: { _id: pageId(source, url) }, update: { $set: { ...fields, ...stamp } }, upsert: true },
  });
  // Inserted meanwhile (a batch read again after a lost lease): written over instead.
  const duplicates = await insertNew(pages.collection, fresh);
  const writes = [...edited.map((e) => upsert(e.url, e.fields)), ...duplicates.map((i) => upsert(fresh[i]!.url, { ...fresh[i]! }))];
  await Promise.all([
    marked.length ? pages.updateMany({ account_id: source.account_id, _id: { $in: marked.map((url) => pageId(source, url)) } }, { $set: stamp }) : null,
    writes.length ? pages.collection.bulkWrite(writes as never, { ordered: false }) : null,
  ]);
  for (const page of fresh) known.set(page.url, page);
  for (const { url, fields } of edited) known.set(url, { ...known.get(url)!, ...fields, ...stamp });
  for (const url of marked) known.set(url, { ...known.get(url)!, ...stamp });
}

function sameField(a: unknown, b: unknown): boolean {
  return Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((x, i) => x === b[i]) : a === b;
}

/**
 * What a finished load keeps and forgets, from the source's entries. After a complete listing (`listed`, the
 * page list, or for crawls the pages this load marked) the documents of listed pages that are not gone stay and
 * everything else in the index goes. After an incomplete one (a sitemap file failed, the crawl hit a limit) only
 * pages missing `MISSING_LOADS_TO_PRUNE` loads in a row go: an unlisted page may just be unreached. A missing page
 * the listing still names loses its document but stays known (`cleared`), streak and all: forgotten, its next 404
 * was a new page's failure, and the source went partial and loaded by turns.
 */
export function settleLoad(
  entries: Iterable<PageRecord>,
  load: { loadId: string; listed: Set<string> | null; complete: boolean },
): { keep: Set<string> | null; gone: string[]; forget: PageSettlement } {
  const keep = new Set<string>();
  const gone: string[] = [];
  const forget: PageSettlement = { urls: [], cleared: [] };
  for (const page of entries) {
    const listed = load.listed ? load.listed.has(page.url) : page.load_id === load.loadId;
    const missing = page.missing >= MISSING_LOADS_TO_PRUNE;
    if (missing || (load.complete && !listed)) {
      if (missing && listed) {
        if (page.doc_url) forget.cleared.push(page.url);
      } else forget.urls.push(page.url);
      if (page.doc_url) gone.push(page.doc_url);
    } else if (page.doc_url) keep.add(page.doc_url);
  }
  return { keep: load.complete ? keep : null, gone: gone.filter((url) => !keep.has(url)), forget };
}

/** The entries a load forgets (`urls`), and those it keeps without their pruned document (`cleared`). */
export interface PageSettlement {
  urls: string[];
  cleared: string[];
}

/**
 * Drops the entries of pages a load pruned and clears the document of those it keeps (after their documents left
 * the index, so a crash redoes it), in `known` too.
 */
export async function forgetPages(pages: Model<PageRecord>, source: SourceKey, settled: PageSettlement, known: Map<string, PageRecord>): Promise<void> {
  // By key: an $in on _id is one indexed command on every backend.
  const byKey = (urls: string[]) => ({ account_id: source.account_id, _id: { $in: urls.map((url) => pageId(source, url)) } });
  for (let i = 0; i < settled.urls.length; i += FORGET_PER_COMMAND) await pages.deleteMany(byKey(settled.urls.slice(i, i + FORGET_PER_COMMAND)));
  for (let i = 0; i < settled.cleared.length; i += FORGET_PER_COMMAND) {
    await pages.updateMany(byKey(settled.cleared.slice(i, i + FORGET_PER_COMMAND)), { $set: { doc_url: null, content_hash: null } });
  }
  for (const url of settled.urls) known.delete(url);
  for (const url of settled.cleared) {
    const page = known.get(url);
    if (page) known.set(url, { ...page, doc_url: null, content_hash: null });
  }
}

const FORGET_PER_COMMAND = 1000;

/** Every entry of a deleted source. */
export async function forgetSource(pages: Model<PageRecord>, source: SourceKey): Promise<void> {
  await pages.deleteMany({ account_id: source.account_id, source_id: source._id });
}
