import type { FetchResponse, SafeFetchOptions } from "../../../lib/safe-fetch";

/** safeFetch with the loader's limiter, signal and limits already bound; readers only choose what they accept. */
export type Fetcher = (url: string, opts?: Pick<SafeFetchOptions, "accept" | "headers" | "maxBytes" | "timeoutMs">) => Promise<FetchResponse>;

/** What a refresh keeps of a page to ask for it conditionally (ETag, Last-Modified) or skip it (sitemap lastmod). */
export interface PageValidators {
  etag: string | null;
  last_modified: string | null;
  lastmod: string | null;
}

/** One document ready for chunking and indexing. */
export interface ReaderDocument {
  url: string;
  title: string;
  content: string;
  /** List readers: the listed URL the document was fetched as, and the validators it answered with. */
  page?: PageValidators & { url: string };
}

/** A page that could not be read, with the reason the loader may write into loading_error. */
export interface PageFailure {
  url: string;
  error: string;
}
