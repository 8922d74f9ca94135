import { pageStartParams, paginationParams } from "../../lib/pagination";
import { SEARCH_MODES, type SearchMode } from "../../lib/search/port";
import { MAX_RERANK_TOP_N } from "../../lib/search/config";
import { FILTER_SCHEMAS, type SearchFilter } from "../../lib/search/filters";
import { CHUNKING_STRATEGIES, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE } from "../../lib/search/chunking";

/**
 * Params of the document index routes. The knowledge service serves the /knowledge URLs and validates them;
 * the search service's internal actions of the same names validate them again with the account added.
 */
/** A query has something to match: blanks alone ranked every document by its embedding alone. */
const queryParam = { type: "string", min: 1, max: 1000, pattern: "\\S", messages: { stringPattern: "The 'query' field must not be blank." } } as const;
/** Knowledge source ids; numeric strings are read as the ids they spell. */
const sourceIdsParam = {
  type: "array",
  optional: true,
  max: 1000,
  items: { type: "number", integer: true, positive: true, convert: true },
  description: "Only documents of these knowledge sources (ids); all of the account's sources when omitted",
} as const;
const modeParam = { type: "enum", values: [...SEARCH_MODES], default: "hybrid", optional: true, description: "semantic (vector similarity), keyword (text matching) or hybrid (both)" } as const;

/**
 * The per-query ranking knobs both search routes take (docs/adr/0056-rerank-and-hybrid-weight.md): the rerank
 * stage after fusion, and the hybrid weight. A knob that would have no effect is refused (422), not ignored.
 */
const rankingParams = {
  rerank: {
    type: "boolean",
    optional: true,
    description:
      "true: the best fused candidates are scored again by the configured reranker (a cross-encoder) and returned in its order; " +
      "422 when the deployment has no reranker (RERANK_URL). If the reranker fails or times out, the fused order is returned with reranked: false",
  },
  rerank_top_n: {
    type: "number",
    integer: true,
    min: 1,
    max: MAX_RERANK_TOP_N,
    optional: true,
    convert: true,
    description: "With rerank: how many of the best fused candidates are reranked (the deployment's RERANK_TOP_N, 30 unless set, when omitted); the rest follow in fused order",
  },
  hybrid_weight: {
    type: "number",
    min: 0,
    max: 1,
    optional: true,
    convert: true,
    description:
      "Hybrid mode only: weight of the semantic list in the fusion, 0 (keyword order) to 1 (semantic order); replaces the deployment's prior (HYBRID_ALPHA), " +
      "and each query's list confidences still shift the weights in between",
  },
} as const;
/**
 * Metadata filters (docs/adr/0058-metadata-filters.md): any JSON here, checked by filterProblems (lib/search/filters.ts),
 * which names every problem as a 422 like the schema's own; the OpenAPI document shows the grammar.
 */
const filtersParam = {
  filters: {
    type: "any",
    optional: true,
    jsonSchema: { $ref: "#/components/schemas/SearchFilter" },
    schemas: FILTER_SCHEMAS,
    description:
      "Only chunks this filter matches, applied inside the engine before ranking (the top results are the best matching ones): " +
      "{type: eq|ne|gt|gte|lt|lte|in|nin, key, value} or {type: and|or, filters: [...]}; keys source_id, document_id, indexed_at, or metadata.<name>",
  },
} as const;

/** The ranking knobs as the handlers read them. */
export type RankingParams = { rerank?: boolean; rerank_top_n?: number; hybrid_weight?: number };

export const documentIdParam = { document_id: { type: "string", min: 1, max: 64, description: "The document's id" } } as const;

export const searchDocumentsParams = {
  query: queryParam,
  mode: modeParam,
  source_ids: sourceIdsParam,
  limit: { type: "number", integer: true, min: 1, max: 100, default: 20, convert: true, optional: true },
  offset: { type: "number", integer: true, min: 0, default: 0, convert: true, optional: true },
  ...filtersParam,
  ...rankingParams,
} as const;
export type SearchDocumentsParams = { query: string; mode: SearchMode; source_ids?: number[]; limit: number; offset: number; filters?: SearchFilter } & RankingParams;

export const listDocumentsParams = {
  source_id: { type: "string", max: 64, optional: true, description: "Only documents of this knowledge source (its id)" },
  ...pageStartParams,
  limit: paginationParams({ max: 200, def: 50 }).limit,
} as const;
export type ListDocumentsParams = { source_id?: string; skip?: number; offset?: number; limit: number };

export const searchSourcesParams = {
  query: queryParam,
  mode: modeParam,
  knowledge_source_ids: sourceIdsParam,
  limit: { type: "number", integer: true, min: 1, max: 50, default: 10, convert: true, optional: true },
  min_score: { type: "number", min: 0, max: 1, default: 0, convert: true, optional: true },
  ...filtersParam,
  ...rankingParams,
} as const;
export type SearchSourcesParams = { query: string; mode: SearchMode; knowledge_source_ids?: number[]; limit: number; min_score: number; filters?: SearchFilter } & RankingParams;

/**
 * A knowledge source's `chunking` (docs/adr/0059-chunking-per-source.md), as its create and update take it and the
 * search actions receive it; the overlap's bound of half the size is checked beside (chunkingSettings).
 */
export const chunkingParam = {
  type: "object",
  strict: true,
  optional: true,
  nullable: true,
  description:
    "How the source's documents are cut into chunks (null: the deployment's default, fixed 1000/100 unless SEARCH_CHUNK_SIZE and SEARCH_CHUNK_OVERLAP say otherwise). " +
    "On update, the given fields replace the current ones; a change re-chunks the stored documents in the background (see rechunk)",
  props: {
    size: { type: "number", integer: true, min: MIN_CHUNK_SIZE, max: MAX_CHUNK_SIZE, optional: true, description: `Largest chunk, in characters (${MIN_CHUNK_SIZE} to ${MAX_CHUNK_SIZE})` },
    overlap: { type: "number", integer: true, min: 0, max: MAX_CHUNK_SIZE / 2, optional: true, description: "Characters a chunk repeats of the one before (0 to half of size)" },
    strategy: {
      type: "enum",
      values: [...CHUNKING_STRATEGIES],
      optional: true,
      description:
        "fixed: windows of at most size characters ending at the nearest paragraph, sentence or word break; " +
        "sentence: whole sentences packed up to size, the overlap repeating whole sentences; " +
        "heading: one section per chunk (Markdown # headings, HTML <h1>-<h6>), long sections cut as fixed",
    },
  },
} as const;

/** A source's settings as stored, all three (null or absent: the deployment's): what the internal search actions take. */
export const storedChunkingParam = {
  ...chunkingParam,
  props: Object.fromEntries(Object.entries(chunkingParam.props).map(([name, rule]) => [name, { ...rule, optional: false }])),
};
