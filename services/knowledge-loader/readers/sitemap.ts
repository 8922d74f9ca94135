import zlib from "node:zlib";
import { SITEMAP_PAGE_CEILING } from "../../../lib/config";
import { FetchError } from "../../../lib/safe-fetch";
import { fetchRobots, type Robots } from "./robots";
import type { Fetcher } from "./types";
import { canonicalUrl } from "./url";

/** sitemaps.org allows 50 MB uncompressed per file; the same bounds a gzip bomb. */
const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;
/** Sitemap files read per source; an index of indexes past this is not a site we can load anyway. */
const MAX_SITEMAP_FILES = 1_000;
/** Indexes should not nest; a little nesting is tolerated, loops are not. */
const MAX_INDEX_DEPTH = 3;
/** Distinct page URLs remembered; past this the listing is cut (and said so) to bound memory. */
const MAX_LISTED_URLS = 1_000_000;
const SITEMAP_CONCURRENCY = 4;
const WELL_KNOWN_PATHS = ["/sitemap.xml", "/sitemap_index.xml"];
const SITEMAP_MEDIA_TYPES = ["application/xml", "text/xml", "application/gzip", "application/x-gzip", "application/octet-stream", "text/plain"];

/** The loading_error text of a source cut by the page ceiling: pages read out of pages listed, and pages skipped. */
export function pageCeilingMessage(read: number, listed: number, skipped: number, ceiling: number): string {
  return `sitemap page ceiling reached: ${read} of ${listed} listed pages read, ${skipped} skipped (ceiling ${ceiling})`;
}

/** A parsed sitemap file: an index points at more sitemaps, a urlset lists pages. */
export interface ParsedSitemap {
  kind: "index" | "urlset";
  locs: string[];
  /** <lastmod> of the pages that declare one, by <loc> as written; absent when none does. */
  lastmods?: Record<string, string>;
}

/** What a sitemap source reads: the first `ceiling` pages in sorted order, out of `listed` distinct ones. */
export interface SitemapListing {
  urls: string[];
  listed: number;
  skipped: number;
  /** Sitemap files that could not be read, with why; the rest of the listing stands. */
  failures: { url: string; error: string }[];
  /** True when MAX_LISTED_URLS cut the listing short. */
  truncated: boolean;
  /** <lastmod> of the kept pages that declare one (a refresh skips pages whose lastmod has not moved). */
  lastmods: Record<string, string>;
}

const XML_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decodeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (all, ent: string) => {
    if (ent[0] === "#") return String.fromCodePoint(ent[1] === "x" || ent[1] === "X" ? parseInt(ent.slice(2), 16) : Number(ent.slice(1)));
    return XML_ENTITIES[ent.toLowerCase()] ?? all;
  });
}

/**
 * The <loc> entries of a sitemap or sitemap index (CDATA and entities decoded). Only bare <loc> counts, so
 * image:loc and video:loc extensions are not taken for pages. A plain-text sitemap (one URL a line) is a urlset.
 */
export function parseSitemap(text: string): ParsedSitemap {
  const kind = /<sitemapindex[\s>]/i.test(text) ? "index" : "urlset";
  if (!/<(urlset|sitemapindex)[\s>]/i.test(text)) {
    const lines = text.split(/\r?\n/).map((l) => l.trim());
    return { kind, locs: lines.filter((l) => /^https?:\/\/\S+$/i.test(l)) };
  }
  const locs: string[] = [];
  for (const match of text.matchAll(LOC)) {
    const loc = locOf(match);
    if (loc) locs.push(loc);
  }
  const lastmods: Record<string, string> = {};
  if (kind === "urlset") {
    for (const [entry] of text.matchAll(/<url>[\s\S]*?<\/url>/gi)) {
      const loc = locOf(LOC_ONCE.exec(entry));
      const lastmod = /<lastmod>\s*([^<]*?)\s*<\/lastmod>/i.exec(entry)?.[1];
      if (loc && lastmod) lastmods[loc] = lastmod;
    }
  }
  return Object.keys(lastmods).length ? { kind, locs, lastmods } : { kind, locs };
}

const LOC = /<loc>\s*(?:<!\[CDATA\[([\s\S]*?)\]\]>|([^<]*))\s*<\/loc>/gi;
const LOC_ONCE = new RegExp(LOC.source, "i");

function locOf(match: RegExpMatchArray | RegExpExecArray | null): string {
  return match ? (match[1] ?? decodeXml(match[2] ?? "")).trim() : "";
}

/** The sitemap file's text: gzip is recognised by its magic bytes, whatever the name or content type said. */
function sitemapText(body: Buffer): string {
  if (body[0] === 0x1f && body[1] === 0x8b) return zlib.gunzipSync(body, { maxOutputLength: MAX_SITEMAP_BYTES }).toString("utf8");
  return body.toString("utf8");
}

async function fetchSitemap(url: string, fetch: Fetcher): Promise<ParsedSitemap> {
  const res = await fetch(url, { accept: SITEMAP_MEDIA_TYPES, maxBytes: MAX_SITEMAP_BYTES });
  try {
    return parseSitemap(sitemapText(res.body));
  } catch (err) {
    throw new FetchError("decode", `${url}: not a readable sitemap (${(err as Error).message})`, url);
  }
}

/** Whether a URL names a sitemap file itself rather than a site. */
export function looksLikeSitemap(url: string): boolean {
  return /\.xml(\.gz)?$|\.gz$/i.test(new URL(url).pathname);
}

async function listsPages(url: string, fetch: Fetcher): Promise<boolean> {
  try {
    return (await fetchSitemap(url, fetch)).locs.length > 0;
  } catch (err) {
    if (err instanceof FetchError && err.kind === "blocked-address") throw err;
    return false;
  }
}

/**
 * The site's sitemaps: those its robots.txt declares with `Sitemap:`, else the first of /sitemap.xml and
 * /sitemap_index.xml. Only sitemaps that answer and list something count; [] means "crawl instead".
 */
export async function discoverSitemaps(siteUrl: string, fetch: Fetcher, robots?: Robots): Promise<string[]> {
  robots ??= await fetchRobots(siteUrl, fetch);
  const declared = robots.sitemaps.map((s) => canonicalUrl(s, siteUrl)).filter((s): s is string => s !== undefined);
  const found: string[] = [];
  for (const url of declared) if (await listsPages(url, fetch)) found.push(url);
  if (found.length > 0) return found;
  for (const path of WELL_KNOWN_PATHS) {
    const url = new URL(path, siteUrl).href;
    if (await listsPages(url, fetch)) return [url];
  }
  return [];
}

/**
 * Where a site's pages live: host (www. or not) and port. sitemaps.org wants every URL on the sitemap's host and
 * port (the crawler keeps to its port too); the scheme is not compared, so a site moved from http to https,
 * whose sitemap lists https pages at the default port, keeps its pages.
 */
function siteHost(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname.replace(/^www\./, "")}:${port}`;
}

/**
 * Reads sitemaps and sitemap indexes (recursively, gzip too), keeps the distinct http(s) pages of the site
 * (`siteUrl`'s host, www. or not, and port; default the first sitemap's) that `allow` lets through (robots.txt), and
 * returns the first `ceiling` in sorted order: sorting makes the cut deterministic, so a reload reads the
 * same pages.
 */
export async function readSitemaps(
  sitemapUrls: string[],
  fetch: Fetcher,
  {
    ceiling = SITEMAP_PAGE_CEILING,
    siteUrl = sitemapUrls[0],
    allow = () => true,
  }: { ceiling?: number; siteUrl?: string; allow?: (url: string) => boolean } = {},
): Promise<SitemapListing> {
  const host = siteHost(siteUrl);
  const pages = new Set<string>();
  const lastmodOf = new Map<string, string>();
  let firstError: unknown;
  const failures: SitemapListing["failures"] = [];
  const visited = new Set<string>();
  let truncated = false;
  let level = sitemapUrls.map((url) => ({ url, depth: 0 }));
  while (level.length > 0 && !truncated) {
    const next: typeof level = [];
    for (let i = 0; i < level.length; i += SITEMAP_CONCURRENCY) {
      const slice = level.slice(i, i + SITEMAP_CONCURRENCY).filter(({ url }) => {
        if (visited.has(url) || visited.size >= MAX_SITEMAP_FILES) return false;
        visited.add(url);
        return true;
      });
      const results = await Promise.allSettled(slice.map(({ url }) => fetchSitemap(url, fetch)));
      results.forEach((result, j) => {
        const { url, depth } = slice[j];
        if (result.status === "rejected") {
          const err = result.reason;
          if (err instanceof FetchError && err.kind === "blocked-address") throw err;
          firstError ??= err;
          failures.push({ url, error: err instanceof Error ? err.message : String(err) });
          return;
        }
        for (const loc of result.value.locs) {
          const canonical = canonicalUrl(loc, url);
          if (!canonical) continue;
          if (result.value.kind === "index") {
            if (depth < MAX_INDEX_DEPTH) next.push({ url: canonical, depth: depth + 1 });
          } else if (siteHost(canonical) === host && allow(canonical)) {
            if (pages.size < MAX_LISTED_URLS) pages.add(canonical);
            else if (!pages.has(canonical)) truncated = true;
            const lastmod = result.value.lastmods?.[loc];
            if (lastmod) lastmodOf.set(canonical, lastmod);
          }
        }
      });
    }
    level = next;
  }
  if (pages.size === 0 && firstError) throw firstError;
  const sorted = [...pages].sort();
  const urls = sorted.slice(0, ceiling);
  const lastmods = Object.fromEntries(urls.flatMap((url) => (lastmodOf.has(url) ? [[url, lastmodOf.get(url)!]] : [])));
  return { urls, listed: sorted.length, skipped: sorted.length - urls.length, failures, truncated, lastmods };
}
