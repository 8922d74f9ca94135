import { defineView, viewRule } from "../../lib/resource";
import { SEARCH_MODES } from "../../lib/search/port";

/*
 * Response shapes of the /knowledge routes that are not a knowledge source: jobs queued, index statistics,
 * documents and search results (rendered by services/knowledge/rules.ts and services/search/rules.ts).
 */

const int = { type: "number", integer: true } as const;
const str = { type: "string" } as const;
const nullable = <T extends string>(type: T) => ({ type, nullable: true }) as const;

/** A source or document deletion queued (DeletionResponse). */
export const Queued = defineView("DeletionResponse", { success: { read: { type: "boolean" } }, message: { read: str }, job_id: { read: str }, status: { read: str } });

export const Preload = defineView("PreloadResponse", {
  success: { read: { type: "boolean" } },
  message: { read: str },
  event_id: { read: nullable("string") },
  status: { read: { type: "enum", values: ["queued", "skipped"] } },
  note: { read: str },
});

const loadReport = { type: "object", nullable: true } as const;
export const SourceStats = defineView("KnowledgeSourceStats", {
  knowledge_source_id: { read: int },
  index_name: { read: str },
  document_count: { read: int },
  index_size_bytes: { read: int },
  last_indexed_at: { read: nullable("date") },
  last_refresh: { read: loadReport },
  next_refresh_at: { read: nullable("date") },
});

/** What a document's listing item and its detail both show. */
const documentFields = {
  id: { read: str },
  title: { read: str },
  url: { read: str },
  source_id: { read: int },
  chunk_count: { read: int },
  indexed_at: { read: { type: "date" } },
} as const;

export const DocumentSummary = defineView("DocumentSummary", { ...documentFields, content_preview: { read: str } });

export const SourceDocuments = defineView("KnowledgeSourceDocuments", {
  documents: { read: { type: "array", items: viewRule(DocumentSummary) } },
  total: { read: int },
  limit: { read: int },
  offset: { read: int },
});

export const DocumentDetail = defineView("DocumentDetail", {
  ...documentFields,
  content: { read: str },
  content_hash: { read: str },
  metadata: { read: { type: "object" } },
  chunk_size: { read: int },
  created_at: { read: { type: "date" } },
  updated_at: { read: { type: "date" } },
  deletion_job_id: { read: nullable("string") },
});

export const DocumentStats = defineView("DocumentStats", {
  total_documents: { read: int },
  total_chunks: { read: int },
  embedded_chunks: { read: int },
  index_status: { read: { type: "enum", values: ["empty", "indexing", "ready"] } },
  index_size_bytes: { read: int },
  last_indexed_at: { read: nullable("date") },
  engine: { read: str },
  embedding_model: { read: nullable("string") },
  pending_chunks: { read: int },
  embedding_rate: { read: { type: "number" } },
  embedding_workers: { read: int },
});

/** Present when the query asked for rerank: true when the reranker ordered the results, false when it failed and the fused order stands. */
const reranked = { type: "boolean", optional: true, description: "With rerank: true when the reranker ordered the results; false when it failed and the fused order was returned" } as const;

/** What a hit carries for a citation (docs/adr/0057-citations-on-hits.md), besides document id, url, title and chunk index. */
const chunkStart = {
  type: "number",
  integer: true,
  nullable: true,
  description:
    "Offset where the chunk begins in the document's content (as GET /knowledge/documents/:id returns it), in UTF-16 code units as JavaScript's String.slice counts them, never inside a character; null for a document indexed before chunk ranges were kept, until it is re-indexed",
} as const;
const chunkEnd = {
  type: "number",
  integer: true,
  nullable: true,
  description: "Offset just past the chunk's end in the document's content, in UTF-16 code units (content.slice(chunk_start, chunk_end) is the chunk); null as chunk_start",
} as const;
const highlight = {
  type: "string",
  description:
    "A snippet of the chunk (at most 200 characters of its text, HTML-escaped) around the query's matching words, each wrapped in <mark>…</mark>; the chunk's opening when no word matches (a semantic hit); … where the snippet cuts the text",
} as const;

const documentResult = {
  type: "object",
  props: {
    id: str,
    document_id: str,
    title: str,
    url: str,
    source_id: int,
    content: str,
    chunk_index: int,
    chunk_start: chunkStart,
    chunk_end: chunkEnd,
    highlight,
    score: { type: "number" },
    normalized_score: { type: "number" },
  },
} as const;
export const DocumentSearch = defineView("DocumentSearchResults", {
  results: { read: { type: "array", items: documentResult } },
  total: { read: int },
  mode_used: { read: { type: "enum", values: SEARCH_MODES } },
  reranked: { read: reranked },
});

const sourceResult = {
  type: "object",
  props: {
    content: str,
    highlight,
    metadata: { type: "object", props: { title: str, url: str, knowledge_source_id: int, document_id: str, chunk_index: int, chunk_start: chunkStart, chunk_end: chunkEnd } },
    score: { type: "number" },
  },
} as const;
export const SourceSearch = defineView("KnowledgeSearchResults", {
  results: { read: { type: "array", items: sourceResult } },
  total_results: { read: int },
  query: { read: str },
  reranked: { read: reranked },
});
