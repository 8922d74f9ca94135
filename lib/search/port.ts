import type { SearchFilter } from "./filters";

/** The three retrieval modes of the interface. */
export const SEARCH_MODES = ["semantic", "keyword", "hybrid"] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** One chunk as the index holds it: text for keyword ranking, an optional vector, and what a hit shows. */
export interface IndexedChunk {
  id: string;
  accountId: number;
  sourceId: number;
  documentId: string;
  /** 0-based position of the chunk in its document. */
  position: number;
  title: string;
  url: string;
  content: string;
  /**
   * The chunk's character range in its document's content as stored (content.slice(chunkStart, chunkEnd) is the
   * chunk's text, whitespace runs aside); null or absent for chunks indexed before ranges were kept.
   */
  chunkStart?: number | null;
  chunkEnd?: number | null;
  /** Unit or raw embedding; null until the embedding stage has produced it. */
  vector: Float32Array | null;
  /** Milliseconds since the epoch. */
  indexedAt: number;
  /** The document's metadata (what filters compare, docs/adr/0058-metadata-filters.md); the same for every chunk of it. */
  metadata?: Record<string, unknown> | null;
}

/** A chunk's place and text as the durable stores keep them (MongoDB's chunk records, Typesense's chunk documents). */
export interface StoredChunk {
  account_id: number;
  source_id: number;
  document_id: string;
  position: number;
  title: string;
  url: string;
  content: string;
  /** The chunk's character range in the document's content; absent in records written before ranges were kept. */
  chunk_start?: number | null;
  chunk_end?: number | null;
}

/** Where a chunk sits and what a hit shows of it, shared by the index's records, metadata and hits. */
export type ChunkIdentity = Pick<IndexedChunk, "id" | "sourceId" | "documentId" | "position" | "title" | "url" | "chunkStart" | "chunkEnd">;

/** A ranked chunk. `score` is the mode's raw score: BM25 / text match, cosine similarity, or the fused rank score. */
export interface ChunkHit extends ChunkIdentity {
  content: string;
  score: number;
  /** Cosine distance 0..2 when the vector list found the chunk. */
  vectorDistance?: number;
  /** Keyword score when the keyword list found the chunk. */
  textScore?: number;
}

export interface IndexQuery {
  accountId: number;
  text: string;
  mode: SearchMode;
  /** The query's embedding; null when no embedding is available (the search is then keyword). */
  vector: Float32Array | null;
  /** Only chunks of these sources; undefined means all sources of the account. */
  sourceIds?: number[];
  /** Chunks to rank in each list (the Typesense per_page / k), at most 250. */
  depth: number;
  /** Weight of the vector list in hybrid fusion. */
  alpha: number;
  /** Vector hits farther than this cosine distance are not candidates (model-specific, calibrated). */
  maxDistance: number;
  /** Only chunks this metadata filter matches, applied before ranking (lib/search/filters.ts `matches`). */
  filter?: SearchFilter;
}

export interface IndexResult {
  hits: ChunkHit[];
  /** What actually ranked the hits: keyword when the query had no vector or the scope holds none. */
  modeUsed: SearchMode;
}

export interface IndexStats {
  documents: number;
  chunks: number;
  /** Chunks that have a vector (the rest are keyword-searchable only, waiting for the embedding stage). */
  vectors: number;
  sizeBytes: number;
}

/**
 * The one port both engines implement. Every call names its account; an engine never returns a chunk of
 * another account. Chunks are upserted whole; vectors may follow later (setVectors).
 */
export interface SearchIndex {
  readonly engine: "embedded" | "typesense";
  start(): Promise<void>;
  stop(): Promise<void>;
  upsertChunks(chunks: IndexedChunk[]): Promise<void>;
  /**
   * A changed document's new chunks in and its stale ones out, as one change where the engine allows it
   * (embedded: searchers see the old version or the new one, never neither nor both); new ones go in first.
   */
  replaceChunks(accountId: number, chunks: IndexedChunk[], staleIds: string[]): Promise<void>;
  setVectors(accountId: number, vectors: { id: string; vector: Float32Array }[]): Promise<void>;
  deleteChunks(accountId: number, ids: string[]): Promise<void>;
  /** A document's metadata changed without its text: its chunks (by id) take the new metadata, nothing else changes. */
  setDocumentMetadata(accountId: number, documentId: string, chunkIds: string[], metadata: Record<string, unknown> | null): Promise<void>;
  deleteSource(accountId: number, sourceId: number): Promise<void>;
  search(query: IndexQuery): Promise<IndexResult>;
  /** Documents searchable in the account (or one source of it). */
  countDocuments(accountId: number, sourceId?: number): Promise<number>;
  stats(accountId: number, sourceId?: number): Promise<IndexStats>;
  /**
   * Engines whose index holds vectors of one size (Typesense) switch embedding models with a second index:
   * the model switch copies every chunk into it while the current one answers, then finishes the switch at
   * once. The embedded engine has no need: it is rebuilt at start with the new model's dimensions.
   */
  copyForModelSwitch?(chunks: IndexedChunk[]): Promise<void>;
  finishModelSwitch?(): Promise<void>;
}

/** Largest candidate list per ranking (Typesense's per_page ceiling). */
export const MAX_DEPTH = 250;
