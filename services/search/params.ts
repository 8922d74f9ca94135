import { paginationParams } from "../../lib/pagination";
import { SEARCH_MODES, type SearchMode } from "../../lib/search/port";

/**
 * Params of the document index routes. The knowledge service serves the /knowledge URLs and validates them;
 * the search service's internal actions of the same names validate them again with the account added.
 */
const queryParam = { type: "string", min: 1, max: 1000 } as const;
/** Knowledge source ids; numeric strings are read as the ids they spell. */
const sourceIdsParam = {
  type: "array",
  optional: true,
  max: 1000,
  items: { type: "number", integer: true, positive: true, convert: true },
  description: "Only documents of these knowledge sources (ids); all of the account's sources when omitted",
} as const;
const modeParam = { type: "enum", values: [...SEARCH_MODES], default: "hybrid", optional: true, description: "semantic (vector similarity), keyword (text matching) or hybrid (both)" } as const;

export const documentIdParam = { document_id: { type: "string", min: 1, max: 64, description: "The document's id" } } as const;

export const searchDocumentsParams = {
  query: queryParam,
  mode: modeParam,
  source_ids: sourceIdsParam,
  limit: { type: "number", integer: true, min: 1, max: 100, default: 20, convert: true, optional: true },
  offset: { type: "number", integer: true, min: 0, default: 0, convert: true, optional: true },
} as const;
export type SearchDocumentsParams = { query: string; mode: SearchMode; source_ids?: number[]; limit: number; offset: number };

export const listDocumentsParams = { source_id: { type: "string", max: 64, optional: true, description: "Only documents of this knowledge source (its id)" }, ...paginationParams({ max: 200, def: 50 }) } as const;
export type ListDocumentsParams = { source_id?: string; skip: number; limit: number };

export const searchSourcesParams = {
  query: queryParam,
  mode: modeParam,
  knowledge_source_ids: sourceIdsParam,
  limit: { type: "number", integer: true, min: 1, max: 50, default: 10, convert: true, optional: true },
  min_score: { type: "number", min: 0, max: 1, default: 0, convert: true, optional: true },
} as const;
export type SearchSourcesParams = { query: string; mode: SearchMode; knowledge_source_ids?: number[]; limit: number; min_score: number };
