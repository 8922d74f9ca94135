import { createHash } from "node:crypto";
import { Schema, type Connection, type Model } from "mongoose";
import { insertNew } from "../../lib/db";
import type { PageValidators, ReaderDocument } from "./readers";

/** Consecutive 404/410 answers after which a page is taken as gone (one may be a deploy or a CDN hiccup). */
export const MISSING_LOADS_TO_PRUNE = 2;

/**
 * What the loader knows of one page of a source across loads: the document it became, its content hash and
 * the validators to ask for it conditionally, how many loads in a row found it missing, and the last load
 * that listed it (a complete load prunes the pages it did not list).
 */
export interface PageRecord extends PageValidators {
  account_id: number;
  source_id: number;
  /** The page as listed or crawled (the key); the document URL may differ after a redirect or rel=canonical. */
  url: string;
  doc_url: string | null;
  content_hash: string | null;
  missing: number;
  load_id: string;
  updated_at: Date;
}

const pageSchema = new Schema<PageRecord>(
  {
    account_id: { type: Number, required: true },
    source_id: { type: Number, required: true },
    url: { type: String, required: true },
    doc_url: { type: String, default: null },
    content_hash: { type: String, default: null },
    etag: { type: String, default: null },
    last_modified: { type: String, default: null },
    lastmod: { type: String, default: null },
    missing: { type: Number, default: 0 },
    load_id: { type: String, required: true },
    updated_at: { type: Date, default: () => new Date() },
  },
  { versionKey: false, collection: "knowledge_pages" },
);
pageSchema.index({ account_id: 1, source_id: 1, url: 1 }, { unique: true });

/** The page registry model on a given connection. */
export function pageRegistryModel(db: Connection): Model<PageRecord> {
  return (db.models.KnowledgePage as Model<PageRecord>) ?? db.model<PageRecord>("KnowledgePage", pageSchema);
}

type SourceKey = { account_id: number; _id: number };

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

/** Registry entries of these pages of a source, by page URL. */
export async function knownPages(pages: Model<PageRecord>, source: SourceKey, urls: string[]): Promise<Map<string, PageRecord>> {
  if (!urls.length) return new Map();
  const rows = await pages.find({ account_id: source.account_id, source_id: source._id, url: { $in: urls } }).lean<PageRecord[]>();
  return new Map(rows.map((r) => [r.url, r]));
}

/** A page's new registry fields after a load read it (only the fields given change). */
export type PageUpdate = { url: string } & Partial<Pick<PageRecord, "doc_url" | "content_hash" | "etag" | "last_modified" | "lastmod" | "missing">>;

/**
 * Writes what a batch learnt, marking each page as listed by this load, in at most three commands: new pages
 * inserted at once, pages that only need the mark updated at once (the usual refresh: nothing changed), and
 * one update each for pages whose fields changed. `known` is what the batch read of the registry.
 */
export async function recordPages(
  pages: Model<PageRecord>,
  source: SourceKey,
  loadId: string,
  updates: PageUpdate[],
  known: Map<string, PageRecord>,
): Promise<void> {
  const now = new Date();
  const scope = { account_id: source.account_id, source_id: source._id };
  const fresh: PageUpdate[] = [];
  const marked: string[] = [];
  const edited: { url: string; fields: Record<string, unknown> }[] = [];
  for (const { url, ...fields } of updates) {
    const page = known.get(url);
    if (!page) fresh.push({ url, ...fields });
    else {
      const changed = Object.fromEntries(Object.entries(fields).filter(([key, value]) => page[key as keyof PageRecord] !== value));
      if (Object.keys(changed).length) edited.push({ url, fields: changed });
      else marked.push(url);
    }
  }
  const upsert = (url: string, fields: Record<string, unknown>) => ({
    updateOne: { filter: { ...scope, url }, update: { $set: { ...fields, load_id: loadId, updated_at: now } }, upsert: true },
  });
  const duplicates = await insertNew(
    pages,
    fresh.map((u) => ({ ...scope, ...NEW_PAGE, ...u, load_id: loadId, updated_at: now }) as PageRecord),
  );
  // Inserted meanwhile (a batch read again after a lost lease): written over instead.
  const rewrites = duplicates.map((i) => upsert(fresh[i]!.url, { ...NEW_PAGE, ...fresh[i]! }));
  const writes = [...edited.map((e) => upsert(e.url, e.fields)), ...rewrites];
  await Promise.all([
    marked.length ? pages.updateMany({ ...scope, url: { $in: marked } }, { $set: { load_id: loadId, updated_at: now } }) : null,
    writes.length ? pages.collection.bulkWrite(writes as never, { ordered: false }) : null,
  ]);
}

const NEW_PAGE = { doc_url: null, content_hash: null, etag: null, last_modified: null, lastmod: null, missing: 0 };

/**
 * What a finished load keeps. After a complete listing: the documents of pages this load listed and that are not
 * gone (everything else in the index goes). After an incomplete one (a sitemap file failed, the crawl hit a
 * limit) only pages missing `MISSING_LOADS_TO_PRUNE` loads in a row go: an unlisted page may just be unreached.
 */
export async function survivors(
  pages: Model<PageRecord>,
  source: SourceKey,
  loadId: string,
  complete: boolean,
): Promise<{ keep: Set<string> | null; gone: string[] }> {
  const scope = { account_id: source.account_id, source_id: source._id };
  const gone = await pages.find({ ...scope, missing: { $gte: MISSING_LOADS_TO_PRUNE }, doc_url: { $ne: null } }, { doc_url: 1 }).lean<PageRecord[]>();
  if (!complete) return { keep: null, gone: gone.map((p) => p.doc_url!) };
  const listed = await pages.find({ ...scope, load_id: loadId, missing: { $lt: MISSING_LOADS_TO_PRUNE }, doc_url: { $ne: null } }, { doc_url: 1 }).lean<PageRecord[]>();
  return { keep: new Set(listed.map((p) => p.doc_url!)), gone: gone.map((p) => p.doc_url!) };
}

/** Drops the entries of pages the load pruned (after their documents left the index, so a crash redoes it). */
export async function forgetGone(pages: Model<PageRecord>, source: SourceKey, loadId: string, complete: boolean): Promise<void> {
  const scope = { account_id: source.account_id, source_id: source._id };
  const gone = complete ? { $or: [{ load_id: { $ne: loadId } }, { missing: { $gte: MISSING_LOADS_TO_PRUNE } }] } : { missing: { $gte: MISSING_LOADS_TO_PRUNE } };
  await pages.deleteMany({ ...scope, ...gone });
}

/** Every entry of a deleted source. */
export async function forgetSource(pages: Model<PageRecord>, source: SourceKey): Promise<void> {
  await pages.deleteMany({ account_id: source.account_id, source_id: source._id });
}
