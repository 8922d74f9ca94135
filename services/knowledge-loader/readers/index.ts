import { FetchError, safeFetch, type FetchResponse, type SafeFetchOptions } from "../../../lib/safe-fetch";
import { conditionalHeaders } from "./conditional";
import { crawlBatch, createCrawlState, type CrawlLimits, type CrawlState } from "./crawl";
import { decodeText } from "./decode";
import { extractHtml } from "./html";
import { extractMarkdown } from "./markdown";
import { extractPdf } from "./pdf";
import { fetchRobots, isAllowed, type Robots } from "./robots";
import { discoverSitemaps, looksLikeSitemap, pageCeilingMessage, readSitemaps } from "./sitemap";
import { extractPlainText } from "./text";
import type { Fetcher, KnownPage, PageFailure, ReaderDocument } from "./types";
import { canonicalUrl } from "./url";
import { createWikiState, parseWikiPath, readWikiBatch, type WikiState } from "./wiki";

export type { Fetcher, KnownPage, PageFailure, PageValidators, ReaderDocument } from "./types";

/** Pages fetched at once by list readers; the host limiter inside the fetcher keeps each site's share polite. */
const DEFAULT_BATCH_SIZE = 8;
const HTML_TYPES = ["text/html", "application/xhtml+xml"];
const PDF_TYPES = ["application/pdf", "application/x-pdf", "application/octet-stream"];
const MARKDOWN_TYPES = ["text/markdown", "text/x-markdown", "text/plain", "application/octet-stream"];
const TEXT_TYPES = ["text/*", "application/octet-stream"];
/** Manuals and reports run larger than web pages. */
const MAX_PDF_BYTES = 50 * 1024 * 1024;

/** The data types a source is stored with (auto is resolved before storing). */
export const DATA_TYPES = ["wiki", "website", "sitemap", "discovery", "pdf", "markdown", "text"] as const;
export type DataType = (typeof DATA_TYPES)[number];

/** What a reader needs from the loader: the bound fetcher, the wiki token for wiki sources, crawl limits if not the defaults. */
export interface ReaderContext {
  fetch: Fetcher;
  wikiToken?: string;
  crawlLimits?: Partial<CrawlLimits>;
  /** A refresh: what the previous load learnt of an indexed page, so readers ask conditionally. */
  previous?: (url: string) => KnownPage | undefined;
  /** Sitemap pages read per load (the configured ceiling; the interface's by default). */
  sitemapCeiling?: number;
}

/** The start of a load: state to persist, the page total when known (loading_urls_total), and a ceiling note. */
export interface LoadPlan<S> {
  state: S;
  total: number | null;
  /** Set when the sitemap page ceiling cut the listing; `ceilingMessage(read, listed, skipped)` words the loading_error. */
  ceiling?: { listed: number; skipped: number };
  /** The listing is the whole source (no sitemap file failed): pages it does not name are gone. */
  complete?: boolean;
  /** What the listing could not read (a sitemap file that failed), for loading_error: the load ends partial. */
  note?: string;
}

/** One step of a load: documents to index, pages that failed, and whether the source is exhausted. */
export interface ReadBatch {
  documents: ReaderDocument[];
  failures: PageFailure[];
  done: boolean;
  /** List readers: the URLs this step handled, and those of them that did not change (304, same sitemap lastmod). */
  listed?: string[];
  unchanged?: string[];
}

/** A data type's reader: start once, then next() until done, persisting the state between calls and windows. */
export interface SourceReader<S = unknown> {
  start(paths: string[], ctx: ReaderContext): Promise<LoadPlan<S>>;
  next(state: S, ctx: ReaderContext, batchSize?: number): Promise<ReadBatch>;
}

/** A list of URLs read in order; `next` is loading_urls_done. */
export interface UrlListState {
  urls: string[];
  next: number;
  as?: "pdf" | "markdown" | "text";
  /** Sitemap <lastmod> per URL (same order), when the sitemap gives any. */
  lastmods?: (string | null)[];
  /**
   * A sitemap's site: where its pages must arrive, redirects followed (the host, and what robots.txt allows), as a
   * crawl's must. A listed page that redirects elsewhere has no document.
   */
  site?: { host: string; robots: Robots };
}

/** A Fetcher over safeFetch with the loader's defaults (limiter, signal, retries) bound once per load. */
export function createFetcher(defaults: SafeFetchOptions = {}): Fetcher {
  return (url, opts = {}) => {
    // An option passed as undefined keeps the default rather than erasing it.
    const given = Object.fromEntries(Object.entries(opts).filter(([, value]) => value !== undefined));
    return safeFetch(url, { ...defaults, ...given, headers: { ...defaults.headers, ...opts.headers } });
  };
}

/** The loading_error wording of the sitemap ceiling, re-exported for the loader. */
export const ceilingMessage = pageCeilingMessage;

/** The file extension of a URL's last path segment, lower-cased; "" when it has none. */
function extension(url: string): string {
  const name = new URL(url).pathname.split("/").pop() ?? "";
  return name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
}

/** Turns a fetched file into a document, by the reader's forced kind or else by content type and extension. */
async function documentFrom(res: FetchResponse, as?: UrlListState["as"]): Promise<ReaderDocument | undefined> {
  const ext = extension(res.url);
  const contentType = res.headers["content-type"] as string | undefined;
  const kind =
    as ??
    (HTML_TYPES.includes(res.contentType) ? "html"
    : res.contentType === "application/pdf" || ext === "pdf" ? "pdf"
    : res.contentType.includes("markdown") || ext === "md" || ext === "markdown" ? "markdown"
    : res.contentType.startsWith("text/") ? "text"
    : undefined);
  switch (kind) {
    case "html": {
      const page = extractHtml(decodeText(res.body, contentType, true), res.url);
      return page.noindex ? undefined : { url: canonicalUrl(res.url) ?? res.url, title: page.title, content: page.content, sections: page.sections, attributes: page.attributes };
    }
    case "pdf":
      if (res.body.subarray(0, 1024).indexOf("%PDF-") < 0) throw new FetchError("bad-content-type", `${res.url} is not a PDF`, res.url);
      return { url: res.url, ...(await extractPdf(res.body)) };
    case "markdown":
      return { url: res.url, ...extractMarkdown(decodeText(res.body, contentType), res.url) };
    case "text":
      return { url: res.url, ...extractPlainText(decodeText(res.body, contentType), res.url) };
    default:
      throw new FetchError("bad-content-type", `${res.url} is ${res.contentType || "of unknown type"}, not a page or document`, res.url);
  }
}

function acceptFor(as: UrlListState["as"]): string[] | undefined {
  return as === "pdf" ? PDF_TYPES : as === "markdown" ? MARKDOWN_TYPES : as === "text" ? TEXT_TYPES : undefined;
}

/** One listed page: unchanged (same sitemap lastmod, or 304 to a conditional request), or its document if any. */
async function readListed(url: string, lastmod: string | null, state: UrlListState, ctx: ReaderContext): Promise<"unchanged" | ReaderDocument | undefined> {
  const known = ctx.previous?.(url);
  if (known && lastmod && known.lastmod === lastmod) return "unchanged";
  const maxBytes = state.as === "pdf" || extension(url) === "pdf" ? MAX_PDF_BYTES : undefined;
  const res = await ctx.fetch(url, { accept: acceptFor(state.as), maxBytes, headers: conditionalHeaders(known) });
  if (res.status === 304) return "unchanged";
  // Redirected off the site, or to a path robots.txt closes: the redirect is not an invitation.
  if (state.site && (new URL(res.url).host !== state.site.host || !isAllowed(state.site.robots, res.url))) return undefined;
  const doc = await documentFrom(res, state.as);
  const header = (name: string) => (res.headers[name] as string | undefined) ?? null;
  return doc && { ...doc, page: { url, etag: header("etag"), last_modified: header("last-modified"), lastmod } };
}

/** The next `batchSize` URLs of a list, fetched at once; failures are reported per page and do not stop the list. */
async function nextOfList(state: UrlListState, ctx: ReaderContext, batchSize = DEFAULT_BATCH_SIZE): Promise<ReadBatch> {
  const urls = state.urls.slice(state.next, state.next + batchSize);
  const results = await Promise.allSettled(urls.map((url, i) => readListed(url, state.lastmods?.[state.next + i] ?? null, state, ctx)));
  const documents: ReaderDocument[] = [];
  const failures: PageFailure[] = [];
  const unchanged: string[] = [];
  results.forEach((result, i) => {
    if (result.status === "rejected") failures.push({ url: urls[i], error: (result.reason as Error).message ?? String(result.reason) });
    else if (result.value === "unchanged") unchanged.push(urls[i]);
    else if (result.value && result.value.content !== "") documents.push(result.value);
  });
  state.next += urls.length;
  return { documents, failures, done: state.next >= state.urls.length, listed: urls, unchanged };
}

function urlList(paths: string[]): string[] {
  const urls = paths.map((p) => canonicalUrl(p));
  const bad = paths.find((_, i) => urls[i] === undefined);
  if (bad !== undefined) throw new FetchError("bad-url", `not a web URL: ${bad}`, bad);
  return [...new Set(urls as string[])];
}

function listReader(as?: UrlListState["as"]): SourceReader<UrlListState> {
  return {
    async start(paths) {
      const urls = urlList(paths);
      return { state: { urls, next: 0, as }, total: urls.length, complete: true };
    },
    next: nextOfList,
  };
}

/** sitemap: the listed pages (robots.txt applied), cut at the ceiling in sorted order, then read as a list. */
const sitemapReader: SourceReader<UrlListState> = {
  async start(paths, ctx) {
    const [site] = urlList(paths);
    const robots = await fetchRobots(site, ctx.fetch);
    if (robots.unreachable) throw new Error(robots.unreachable);
    const sitemaps = looksLikeSitemap(site) ? urlList(paths) : await discoverSitemaps(site, ctx.fetch, robots);
    if (sitemaps.length === 0) throw new FetchError("http-status", `no sitemap found for ${site} (robots.txt, /sitemap.xml, /sitemap_index.xml)`, site);
    const listing = await readSitemaps(sitemaps, ctx.fetch, { ceiling: ctx.sitemapCeiling, siteUrl: site, allow: (url) => isAllowed(robots, url) });
    if (listing.urls.length === 0) throw new Error(`the sitemaps of ${site} list no page this loader may read (same site, allowed by robots.txt)`);
    const ceiling = listing.skipped > 0 ? { listed: listing.listed, skipped: listing.skipped } : undefined;
    const lastmods = Object.keys(listing.lastmods).length ? listing.urls.map((url) => listing.lastmods[url] ?? null) : undefined;
    const complete = listing.failures.length === 0 && !listing.truncated;
    const failed = listing.failures.at(-1);
    const note = failed && `${listing.failures.length} sitemap file(s) could not be read; last: ${failed.error}`;
    const siteRules = { host: new URL(site).host, robots: { rules: robots.rules, sitemaps: [] } };
    return { state: { urls: listing.urls, next: 0, ...(lastmods ? { lastmods } : {}), site: siteRules }, total: listing.urls.length, ceiling, complete, ...(note ? { note } : {}) };
  },
  next: nextOfList,
};

/** discovery: a resumable same-host crawl from the first path. */
const discoveryReader: SourceReader<CrawlState> = {
  async start(paths, ctx) {
    return { state: createCrawlState(urlList(paths)[0], ctx.crawlLimits), total: null };
  },
  async next(state, ctx, batchSize = DEFAULT_BATCH_SIZE) {
    const { pages, unchanged, failures, done } = await crawlBatch(state, ctx.fetch, batchSize, ctx.previous);
    if (done && state.stopReason && state.pagesRead === 0) throw new Error(state.stopReason);
    return { documents: pages.map(({ url, title, content, page }) => ({ url, title, content, page })), failures, done, unchanged };
  },
};

function wikiToken(ctx: ReaderContext): string {
  if (!ctx.wikiToken) throw new Error("a wiki source needs an API token");
  return ctx.wikiToken;
}

/** wiki: a Confluence-style space, page by page of its REST listing. */
const wikiReader: SourceReader<WikiState> = {
  async start(paths, ctx) {
    wikiToken(ctx);
    return { state: createWikiState(parseWikiPath(paths[0])), total: null };
  },
  async next(state, ctx) {
    const { documents, done } = await readWikiBatch(state, wikiToken(ctx), ctx.fetch);
    return { documents, failures: [], done };
  },
};

/** The reader for each stored data type. */
export const READERS: Record<DataType, SourceReader> = {
  website: listReader(),
  sitemap: sitemapReader,
  discovery: discoveryReader,
  pdf: listReader("pdf"),
  markdown: listReader("markdown"),
  text: listReader("text"),
  wiki: wikiReader,
};

/**
 * What `auto` (or no data_type) means for a URL: a file by its extension, else "sitemap" when the site has
 * one (robots.txt Sitemap lines, /sitemap.xml, /sitemap_index.xml), else "discovery".
 */
export async function resolveDataType(url: string, fetch: Fetcher): Promise<DataType> {
  const ext = extension(url);
  if (ext === "pdf") return "pdf";
  if (ext === "md" || ext === "markdown") return "markdown";
  if (ext === "txt") return "text";
  if (looksLikeSitemap(url)) return "sitemap";
  return (await discoverSitemaps(url, fetch)).length > 0 ? "sitemap" : "discovery";
}
