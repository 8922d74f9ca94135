/*
 * The search service's public face (docs/adr/0052-service-boundaries.md): the only file of services/search/ another
 * service may import. Its collections (search_*) are written only by its actions; what is exported here is the
 * contract of those actions.
 */

/** Params of the document and search actions, declared once: the knowledge service's thin routes reuse them. */
export { chunkingParam, documentIdParam, listDocumentsParams, searchDocumentsParams, searchSourcesParams } from "./params";
/** Document URLs listed or removed per internal call (the loader pages through them when it prunes). */
export { MAX_URLS_PER_CALL } from "./rules";
