import type { FetchResponse, SafeFetchOptions } from "../../../lib/safe-fetch";

/** safeFetch with the loader's limiter, signal and limits already bound; readers only choose what they accept. */
export type Fetcher = (url: string, opts?: Pick<SafeFetchOptions, "accept" | "headers" | "maxBytes" | "timeoutMs">) => Promise<FetchResponse>;

/** One document ready for chunking and indexing. */
export interface ReaderDocument {
  url: string;
  title: string;
  content: string;
}

/** A page that could not be read, with the reason the loader may write into loading_error. */
export interface PageFailure {
  url: string;
  error: string;
}
