import { FetchError } from "../../../lib/safe-fetch";
import { extractHtml } from "./html";
import type { Fetcher, ReaderDocument } from "./types";

/** Pages asked for per request; Confluence caps `limit` server-side anyway and we follow what it returns. */
const WIKI_PAGE_SIZE = 25;
/** A space's pages as JSON with their bodies; large spaces have large pages. */
const MAX_WIKI_RESPONSE_BYTES = 20 * 1024 * 1024;

/** Which space of which wiki; the token that reads it is not part of it (it is never persisted). */
export interface WikiSpace {
  /** The wiki's base URL, context path included (https://example.atlassian.net/wiki). */
  baseUrl: string;
  spaceKey: string;
}

/** Where a wiki load stands: the `start` offset of the next request, null when the space is read. */
export interface WikiState {
  baseUrl: string;
  spaceKey: string;
  next: number | null;
}

interface ContentPage {
  results: { id: string; title: string; body?: { storage?: { value?: string } }; _links?: { webui?: string } }[];
  start?: number;
  limit?: number;
  size?: number;
  _links?: { base?: string; next?: string };
}

/**
 * The wiki base and space key a source path names: .../spaces/KEY[/...] or .../display/KEY[/...] (the
 * Confluence forms), or BASE?spaceKey=KEY.
 */
export function parseWikiPath(path: string): WikiSpace {
  const url = new URL(path);
  const fromQuery = url.searchParams.get("spaceKey");
  if (fromQuery) return { baseUrl: `${url.origin}${url.pathname.replace(/\/+$/, "")}`, spaceKey: fromQuery };
  const match = /^(.*?)\/(?:spaces|display)\/([^/]+)/.exec(url.pathname);
  if (!match) throw new FetchError("bad-url", `not a wiki space URL (expected .../spaces/KEY or ?spaceKey=KEY): ${path}`, path);
  return { baseUrl: `${url.origin}${match[1]}`, spaceKey: decodeURIComponent(match[2]) };
}

function contentUrl(baseUrl: string, spaceKey: string, start: number): string {
  const query = new URLSearchParams({ spaceKey, type: "page", expand: "body.storage,version", start: String(start), limit: String(WIKI_PAGE_SIZE) });
  return `${baseUrl}/rest/api/content?${query}`;
}

/**
 * The offset of the next request: Confluence sends `_links.next` while pages remain, so `_links` without it
 * means the end; a server without `_links` goes on while its pages come back full.
 */
function nextStart(page: ContentPage, start: number): number | null {
  if (page._links) {
    if (!page._links.next) return null;
    const next = Number(new URL(page._links.next, "http://x").searchParams.get("start"));
    return Number.isFinite(next) && next > start ? next : null;
  }
  const size = page.size ?? page.results.length;
  return size > 0 && size >= (page.limit ?? WIKI_PAGE_SIZE) ? start + size : null;
}

/** A fresh load of a space; only the position is state, the token is supplied on every call. */
export function createWikiState(space: WikiSpace): WikiState {
  return { baseUrl: space.baseUrl.replace(/\/+$/, ""), spaceKey: space.spaceKey, next: 0 };
}

/**
 * Reads the next page of the space's pages (Confluence REST `GET /rest/api/content`, Bearer token), converts
 * each storage-format body to text with the HTML extractor and advances `state.next`. A 401/403 is a
 * FetchError of kind http-status: the token is wrong, the load fails.
 */
export async function readWikiBatch(state: WikiState, token: string, fetch: Fetcher): Promise<{ documents: ReaderDocument[]; done: boolean }> {
  if (state.next === null) return { documents: [], done: true };
  const start = state.next;
  const res = await fetch(contentUrl(state.baseUrl, state.spaceKey, start), {
    headers: { authorization: `Bearer ${token}` },
    accept: ["application/json"],
    maxBytes: MAX_WIKI_RESPONSE_BYTES,
  });
  let page: ContentPage;
  try {
    page = JSON.parse(res.body.toString("utf8")) as ContentPage;
    if (!Array.isArray(page.results)) throw new Error("no results array");
  } catch (err) {
    throw new FetchError("decode", `${res.url}: not a wiki content listing (${(err as Error).message})`, res.url);
  }
  const linkBase = page._links?.base ?? state.baseUrl;
  const documents = page.results.map((item) => {
    const url = item._links?.webui ? new URL(linkBase + item._links.webui).href : `${state.baseUrl}/pages/viewpage.action?pageId=${item.id}`;
    const extract = extractHtml(item.body?.storage?.value ?? "", url);
    return { url, title: item.title || extract.title, content: extract.content, sections: extract.sections };
  });
  state.next = nextStart(page, start);
  return { documents: documents.filter((d) => d.content !== ""), done: state.next === null };
}
