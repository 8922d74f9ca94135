import type { FetchResponse, SafeFetchOptions } from "../../../lib/safe-fetch";
import type { PageAttributes } from "./html";

/** safeFetch with the loader's limiter, signal and limits already bound; readers only choose what they accept. */
export type Fetcher = (url: string, opts?: Pick<SafeFetchOptions, "accept" | "headers" | "maxBytes" | "timeoutMs">) => Promise<FetchResponse>;

/** What a refresh keeps of a page to ask for it conditionally (ETag, Last-Modified) or skip it (sitemap lastmod). */
export interface PageValidators {
  etag: string | null;
  last_modified: string | null;
  lastmod: string | null;
}

/**
 * What a refresh knows of a page from the previous load: its validators, the document it became, and for crawls
 * the links it led to (kept so a page answering 304, which carries no body, still has its links followed).
 */
export interface KnownPage extends PageValidators {
  doc_url: string | null;
  /** Same-site links the page gave to follow (none when it is nofollow); absent when not kept (list readers). */
  links?: string[] | null;
}

/** One document ready for chunking and indexing. */
export interface ReaderDocument {
  url: string;
  title: string;
  content: string;
  /** Offsets into content where a heading begins (HTML and Markdown readers), for the `heading` chunking. */
  sections?: number[];
  /** What an HTML page says of itself (language, description, keywords, author): part of the document's metadata. */
  attributes?: PageAttributes;
  /** The listed or queued URL the document was fetched as, the validators it answered with, and (crawls) its links. */
  page?: PageValidators & { url: string; links?: string[] };
}

/** A page that could not be read, with the reason the loader may write into loading_error. */
export interface PageFailure {
  url: string;
  error: string;
}
