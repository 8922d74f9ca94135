import { createHash } from "node:crypto";
import { FetchError, type FetchResponse } from "../../../lib/safe-fetch";
import { decodeText } from "./decode";
import { extractHtml } from "./html";
import { fetchRobots, isAllowed, type Robots } from "./robots";
import { conditionalHeaders } from "./conditional";
import type { Fetcher, KnownPage, PageFailure, ReaderDocument } from "./types";
import { canonicalUrl, looksNonHtml } from "./url";

/** Same ceiling as sitemap sources, so a site costs the same whichever way it is found. */
const DEFAULT_MAX_PAGES = 10_000;
const DEFAULT_MAX_DEPTH = 10;
/** URLs waiting at once; link-heavy sites (calendars, faceted search) would otherwise grow the state without end. */
const DEFAULT_MAX_QUEUED = 50_000;
/** Fetches per page kept: duplicates, redirects and 404s cost fetches too, but a site of endless variants must end. */
const FETCHES_PER_PAGE = 3;
/** Failures kept in the state: enough to explain a partial load, bounded for persistence. */
const MAX_FAILURES_KEPT = 20;
const HTML_MEDIA_TYPES = ["text/html", "application/xhtml+xml"];

/** How far a discovery crawl may go. */
export interface CrawlLimits {
  maxPages: number;
  maxDepth: number;
  maxQueued: number;
  maxFetches: number;
}

/**
 * Everything a crawl knows, as plain JSON: the loader persists it at the end of a window and the next window
 * continues from it. `seen`, `emitted` and `hashes` are sets stored as objects, keyed by hashes (urlKey, the
 * content hash): never by URLs, whose dots no MongoDB field name may hold.
 */
export interface CrawlState {
  startUrl: string;
  /** host[:port] being crawled; adopted from the first page when the start URL redirects (http -> https, www). */
  host: string;
  limits: CrawlLimits;
  queue: { url: string; depth: number }[];
  /** Canonical URLs ever queued or fetched (by urlKey): never queued twice. */
  seen: Record<string, 1>;
  /** Canonical URLs of pages yielded, after <link rel=canonical> (by urlKey): never yielded twice. */
  emitted: Record<string, 1>;
  /** Content hashes of pages yielded: the same text under two URLs is one page. */
  hashes: Record<string, 1>;
  robots?: Robots;
  /** Why the crawl could not start or stopped early (robots.txt unreachable). */
  stopReason?: string;
  pagesRead: number;
  fetched: number;
  skipped: number;
  failed: number;
  failures: PageFailure[];
}

/** A URL as a key of the crawl's sets: 128 bits of its SHA-1 in base64url (no dots, no `$`). */
function urlKey(url: string): string {
  return createHash("sha1").update(url).digest("base64url").slice(0, 22);
}

/** A page the crawl yields, at its canonical URL. */
export interface CrawledPage extends ReaderDocument {
  depth: number;
}

/** A fresh crawl of the site at startUrl. */
export function createCrawlState(startUrl: string, limits: Partial<CrawlLimits> = {}): CrawlState {
  const start = canonicalUrl(startUrl);
  if (!start) throw new FetchError("bad-url", `not a web URL: ${startUrl}`, startUrl);
  const maxPages = limits.maxPages ?? DEFAULT_MAX_PAGES;
  return {
    startUrl: start,
    host: new URL(start).host,
    limits: { maxPages, maxDepth: DEFAULT_MAX_DEPTH, maxQueued: DEFAULT_MAX_QUEUED, maxFetches: maxPages * FETCHES_PER_PAGE, ...limits },
    queue: [{ url: start, depth: 0 }],
    seen: { [urlKey(start)]: 1 },
    emitted: {},
    hashes: {},
    pagesRead: 0,
    fetched: 0,
    skipped: 0,
    failed: 0,
    failures: [],
  };
}

/** Whether the crawl has nothing left to do (queue empty, page or fetch limit reached, or stopped). */
export function crawlFinished(state: CrawlState): boolean {
  const { maxPages, maxFetches } = state.limits;
  return state.stopReason !== undefined || state.queue.length === 0 || state.pagesRead >= maxPages || state.fetched >= maxFetches;
}

type QueueItem = CrawlState["queue"][number];

function sameHost(state: CrawlState, link: string): boolean {
  const url = canonicalUrl(link);
  return url !== undefined && new URL(url).host === state.host;
}

function enqueue(state: CrawlState, link: string, depth: number): void {
  const url = canonicalUrl(link);
  if (!url) return;
  const id = urlKey(url);
  if (state.seen[id] || state.queue.length >= state.limits.maxQueued) return;
  if (new URL(url).host !== state.host || looksNonHtml(url)) return;
  if (state.robots && !isAllowed(state.robots, url)) return;
  state.seen[id] = 1;
  state.queue.push({ url, depth });
}

function recordFailure(state: CrawlState, url: string, err: unknown): PageFailure {
  const failure = { url, error: err instanceof Error ? err.message : String(err) };
  state.failed++;
  if (state.failures.length < MAX_FAILURES_KEPT) state.failures.push(failure);
  return failure;
}

/** The page's final URL when the crawl may take it: on the crawled host (adopted from the start page) and allowed by robots.txt. */
function arrival(state: CrawlState, item: QueueItem, finalUrl: string): string | undefined {
  const final = canonicalUrl(finalUrl)!;
  if (state.pagesRead === 0 && item.url === state.startUrl) state.host = new URL(final).host;
  // Redirected off-site, or to a path robots.txt closes: the redirect is not an invitation.
  if (new URL(final).host !== state.host || (state.robots && !isAllowed(state.robots, final))) return void state.skipped++;
  state.seen[urlKey(final)] = 1;
  return final;
}

function follow(state: CrawlState, item: QueueItem, links: string[]): void {
  if (item.depth < state.limits.maxDepth) for (const link of links) enqueue(state, link, item.depth + 1);
}

/**
 * A page that answered 304 to a refresh's conditional request: its document stays as the previous load indexed
 * it, and the links it gave then are followed again.
 */
function revisitPage(state: CrawlState, item: QueueItem, finalUrl: string, known: KnownPage & { links: string[] }): boolean {
  if (!arrival(state, item, finalUrl)) return false;
  follow(state, item, known.links);
  if (known.doc_url) {
    state.seen[urlKey(known.doc_url)] = 1;
    state.emitted[urlKey(known.doc_url)] = 1;
  }
  state.pagesRead++;
  return true;
}

/** Turns one fetched page into a yielded page (or a skip), and queues its links. */
function processPage(state: CrawlState, item: QueueItem, res: FetchResponse): CrawledPage | undefined {
  const final = arrival(state, item, res.url);
  if (!final) return undefined;
  let text: string;
  try {
    text = decodeText(res.body, res.headers["content-type"] as string | undefined, true);
  } catch {
    // Binary behind an HTML type: skipped, as a download behind a link is.
    return void state.skipped++;
  }
  const page = extractHtml(text, final);
  // Kept with the page, so a refresh that finds it unchanged (304) still follows them.
  const links = page.nofollow ? [] : page.links.filter((link) => sameHost(state, link));
  follow(state, item, links);

  const declared = page.canonical ? canonicalUrl(page.canonical) : undefined;
  const key = declared && new URL(declared).host === state.host ? declared : final;
  const hash = createHash("sha1").update(page.content).digest("base64url").slice(0, 16);
  const keyId = urlKey(key);
  if (page.noindex || state.emitted[keyId] || state.hashes[hash] || page.content === "") return void state.skipped++;
  // The canonical target counts as seen: fetching it later would only find this page again.
  state.seen[keyId] = 1;
  state.emitted[keyId] = 1;
  state.hashes[hash] = 1;
  state.pagesRead++;
  const header = (name: string) => (res.headers[name] as string | undefined) ?? null;
  const validators = { etag: header("etag"), last_modified: header("last-modified"), lastmod: null };
  return { url: key, title: page.title, content: page.content, sections: page.sections, attributes: page.attributes, depth: item.depth, page: { url: item.url, ...validators, links } };
}

/**
 * Fetches up to `batchSize` queued pages at once (the fetcher's host limiter keeps that polite) and processes
 * them in queue order, so the result does not depend on which answer came first. The state is consistent
 * when it resolves: index the pages, persist the state, and the next call (or the next window) goes on.
 * On a refresh (`previous`), a page whose links were kept is asked conditionally; `unchanged` lists those that
 * answered 304.
 */
export async function crawlBatch(
  state: CrawlState,
  fetch: Fetcher,
  batchSize = 8,
  previous?: (url: string) => KnownPage | undefined,
): Promise<{ pages: CrawledPage[]; unchanged: string[]; failures: PageFailure[]; done: boolean }> {
  if (!state.robots && !state.stopReason) {
    const robots = await fetchRobots(state.startUrl, fetch);
    state.robots = { rules: robots.rules, sitemaps: robots.sitemaps };
    if (robots.unreachable) state.stopReason = robots.unreachable;
    else if (!isAllowed(state.robots, state.startUrl)) state.stopReason = `robots.txt disallows ${state.startUrl}`;
  }
  if (crawlFinished(state)) return { pages: [], unchanged: [], failures: [], done: true };

  const take = Math.min(batchSize, state.limits.maxPages - state.pagesRead, state.limits.maxFetches - state.fetched);
  const items = state.queue.splice(0, take);
  state.fetched += items.length;
  const known = items.map((item) => {
    const page = previous?.(item.url);
    return page && Array.isArray(page.links) ? (page as KnownPage & { links: string[] }) : undefined;
  });
  const results = await Promise.allSettled(items.map((item, i) => fetch(item.url, { accept: HTML_MEDIA_TYPES, headers: conditionalHeaders(known[i]) })));
  const pages: CrawledPage[] = [];
  const unchanged: string[] = [];
  const failures: PageFailure[] = [];
  results.forEach((result, i) => {
    const item = items[i];
    if (result.status === "rejected") {
      const err = result.reason;
      // Not HTML after all (a download behind an extension-less link): skipped, not failed; but the start page is the
      // crawl's own, so its 404 is the reason a crawl found nothing.
      const skippable = err instanceof FetchError && (err.kind === "bad-content-type" || err.status === 404 || err.status === 410);
      if (skippable && item.url !== state.startUrl) state.skipped++;
      else failures.push(recordFailure(state, item.url, err));
      return;
    }
    const res = result.value;
    if (res.status === 304) {
      if (revisitPage(state, item, res.url, known[i]!)) unchanged.push(item.url);
      return;
    }
    const page = processPage(state, item, res);
    if (page) pages.push(page);
  });
  return { pages, unchanged, failures, done: crawlFinished(state) };
}
