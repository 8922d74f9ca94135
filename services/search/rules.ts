import { createHash } from "node:crypto";
import { chunkContent, type ChunkingSettings } from "../../lib/search/chunking";
import { highlight } from "../../lib/search/highlight";
import { normalizedScore } from "../../lib/search/fusion";
import type { FieldProblem } from "../../lib/errors";
import type { ChunkHit, IndexStats, SearchIndex, SearchMode } from "../../lib/search/port";
import { applyRerank, type RerankHit } from "../../lib/search/rerank";
import type { RankingParams } from "./params";
import { MAX_DEPTH } from "../../lib/search/port";
import type { EmbedProgress } from "./embed-stage";
import type { DocumentRecord } from "./model";
import { clipChars } from "../../lib/text";

/** Characters of content shown in a listing item. */
export const PREVIEW_LENGTH = 200;
/** Chunk candidates never fewer than this per list (Typesense's default k, for stable pagination). */
export const MIN_DEPTH = 100;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Stable document id per (account, source, url): re-loading a page updates it instead of adding another. */
export function documentIdFor(accountId: number, sourceId: number, url: string): string {
  return sha256(`${accountId}\u0000${sourceId}\u0000${url}`).slice(0, 32);
}

/** The content_hash of a document (SHA-256 of its content). */
export function contentHash(content: string): string {
  return sha256(content);
}

/**
 * What a stored chunk holds besides its text. A document indexed under another layout is re-indexed on its next
 * load even when unchanged: its chunks keep their ids and vectors and get what they lacked (ranges: ADR 0057).
 */
const CHUNK_LAYOUT = "ranges";

/**
 * Everything that decides a document's chunks; equal keys mean re-indexing would produce the same chunks. The
 * `fixed` strategy is left out of the key, so documents indexed before per-source chunking keep theirs; a reader's
 * section marks count for `heading` only.
 */
export function indexKey(d: { title: string; url: string; contentHash: string; chunking: ChunkingSettings; sections?: number[] }): string {
  const { size, overlap, strategy } = d.chunking;
  const layout = strategy === "fixed" ? [] : strategy === "heading" && d.sections?.length ? [strategy, d.sections] : [strategy];
  return sha256(JSON.stringify([d.title, d.url, d.contentHash, size, overlap, CHUNK_LAYOUT, ...layout]));
}


/** The text a chunk is embedded as: its document title gives a short chunk its context. */
export function embedText(title: string, content: string): string {
  return title ? `${title}\n\n${content}` : content;
}

/** Embedding cache key: the same text under the same model always has the same vector. */
export function embedKey(model: string, text: string): string {
  return `${model}:${sha256(text)}`;
}

export interface PlannedChunk {
  id: string;
  position: number;
  content: string;
  /** The chunk's character range in the document's content (chunking.ts docStart/docEnd). */
  start: number;
  end: number;
  embedKey: string;
}

/** The chunks of a document; chunk ids change with their text, so an unchanged chunk keeps its vector. */
export function planChunks(doc: { id: string; title: string; content: string; sections?: number[] }, chunking: ChunkingSettings, model: string): PlannedChunk[] {
  return chunkContent(doc.content, chunking, doc.sections).map((c) => ({
    id: sha256(`${doc.id}\u0000${c.position}\u0000${c.text}`).slice(0, 32),
    position: c.position,
    content: c.text,
    start: c.docStart,
    end: c.docEnd,
    embedKey: embedKey(model, embedText(doc.title, c.text)),
  }));
}

/** Chunk candidates to rank for a page of documents: several chunks per document, within Typesense's ceiling. */
export function candidateDepth(offset: number, limit: number): number {
  return Math.min(MAX_DEPTH, Math.max(MIN_DEPTH, 3 * (offset + limit)));
}

/**
 * Source filter from request ids. Knowledge source ids are integers; anything else names no source of the
 * caller, so it matches nothing (an empty list), as an id of another account does.
 */
export function parseSourceIds(ids: (string | number)[] | undefined): number[] | undefined {
  if (ids === undefined || ids === null) return undefined;
  return ids.map((v) => (typeof v === "number" ? v : /^\d+$/.test(v.trim()) ? Number(v) : NaN)).filter((v) => Number.isSafeInteger(v) && v > 0);
}

/**
 * The hits best first (stable: the engine's order breaks ties). Engines rank their own lists, but the interface's
 * promise (a higher normalized_score never below a lower one, 100 the best) is kept here whatever order hits come
 * in: scores of a replica whose keyword statistics (1 s) or vectors (embeddings pending) lag are not trusted to
 * arrive in order.
 */
export function bestFirst(hits: ChunkHit[]): ChunkHit[] {
  return [...hits].sort((a, b) => b.score - a.score);
}

/** Each document once, at the rank of its best chunk (hits best first). */
export function collapseByDocument(hits: ChunkHit[]): ChunkHit[] {
  const seen = new Set<string>();
  return hits.filter((h) => !seen.has(h.documentId) && seen.add(h.documentId));
}

/** A ranked chunk with the score its response shows: the fused one, or the reranker's after the rerank stage. */
export interface Scored {
  hit: ChunkHit;
  score: number;
}

/** Hits with the scores they were ranked by. */
export function fusedScores(hits: ChunkHit[]): Scored[] {
  return hits.map((hit) => ({ hit, score: hit.score }));
}

/**
 * The rerank stage's order: the first topN candidates as the reranker ordered them, with its scores; the rest in
 * the order they had, scored 0 (not judged again, so never above one that was).
 */
export function rerankedOrder(candidates: ChunkHit[], hits: RerankHit[], topN: number): Scored[] {
  return applyRerank(candidates, hits, topN).map(({ item, score }) => ({ hit: item, score: score ?? 0 }));
}

/**
 * Problems of the ranking knobs that no schema sees (docs/adr/0056-rerank-and-hybrid-weight.md): a knob that
 * would do nothing is refused rather than ignored.
 */
export function rankingProblems(p: RankingParams, mode: SearchMode, rerankConfigured: boolean): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (p.hybrid_weight !== undefined && mode !== "hybrid") {
    problems.push({ field: "hybrid_weight", message: `The 'hybrid_weight' field applies to mode hybrid only (mode is ${mode}).`, type: "hybridOnly", location: "body" });
  }
  if (p.rerank && !rerankConfigured) {
    problems.push({ field: "rerank", message: "The 'rerank' field asks for a reranker, and this deployment has none (RERANK_URL).", type: "rerankUnavailable", location: "body" });
  }
  if (p.rerank_top_n !== undefined && !p.rerank) {
    problems.push({ field: "rerank_top_n", message: "The 'rerank_top_n' field applies with rerank: true only.", type: "rerankOnly", location: "body" });
  }
  return problems;
}

/** One result of the document search: the document with its best-matching chunk, raw and 0..100 scores. */
export function documentResult(hit: ChunkHit, best: number, score = hit.score, query = "") {
  return {
    id: hit.documentId,
    document_id: hit.documentId,
    title: hit.title,
    url: hit.url,
    source_id: hit.sourceId,
    content: hit.content,
    chunk_index: hit.position,
    chunk_start: hit.chunkStart ?? null,
    chunk_end: hit.chunkEnd ?? null,
    highlight: highlight(hit.content, query),
    score,
    normalized_score: normalizedScore(score, best),
  };
}

/** A page of documents already in their final order (each once), scored against the first. */
export function scoredDocumentPage(ranked: Scored[], offset: number, limit: number, query = "") {
  const best = ranked[0]?.score ?? 0;
  return { results: ranked.slice(offset, offset + limit).map((r) => documentResult(r.hit, best, r.score, query)), total: ranked.length };
}

/** Results of the source-level search, of chunks already in their final order: chunk text, title and url, and the 0..1 score min_score compares with. */
export function scoredSourceResults(ranked: Scored[], minScore: number, limit: number, query = "") {
  const best = ranked[0]?.score ?? 0;
  const results = [];
  for (const { hit: h, score: raw } of ranked) {
    if (results.length >= limit) break;
    const score = normalizedScore(raw, best) / 100;
    if (score < minScore) continue;
    // Text is read only for the results returned (the embedded engine reads it from disk on demand).
    results.push({
      content: h.content,
      highlight: highlight(h.content, query),
      metadata: {
        title: h.title,
        url: h.url,
        knowledge_source_id: h.sourceId,
        document_id: h.documentId,
        chunk_index: h.position,
        chunk_start: h.chunkStart ?? null,
        chunk_end: h.chunkEnd ?? null,
      },
      score,
    });
  }
  return results;
}

/** The listing item (DocumentSummary). */
export function documentSummary(d: Pick<DocumentRecord, "_id" | "title" | "url" | "content" | "source_id" | "indexed_at" | "chunk_ids">) {
  const head = clipChars(d.content, PREVIEW_LENGTH);
  const preview = head.length < d.content.length ? `${head.trimEnd()}…` : d.content;
  return {
    id: d._id,
    title: d.title,
    content_preview: preview,
    url: d.url,
    source_id: d.source_id,
    chunk_count: d.chunk_ids.length,
    indexed_at: d.indexed_at,
  };
}

/** The single-document response (DocumentDetail): full content and metadata. */
export function documentDetail(d: DocumentRecord) {
  return {
    id: d._id,
    title: d.title,
    url: d.url,
    content: d.content,
    content_hash: d.content_hash,
    source_id: d.source_id,
    metadata: d.metadata ?? {},
    chunk_count: d.chunk_ids.length,
    chunk_size: d.chunk_size,
    indexed_at: d.indexed_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
    deletion_job_id: d.deletion_job_id,
  };
}

/** The DeletionResponse of a queued document deletion. */
export function deletionResponse(jobId: string) {
  return { success: true, message: "Document deletion queued", job_id: jobId, status: "queued" };
}

/** Account index status: empty, indexing (chunks still waiting for vectors), or ready. */
export function indexStatus(chunks: number, pendingEmbeddings: number): "empty" | "indexing" | "ready" {
  if (!chunks) return "empty";
  return pendingEmbeddings > 0 ? "indexing" : "ready";
}

/**
 * GET /knowledge/documents/stats: the account's index, and how far embedding is. Without an embedding model
 * nothing is pending (keyword search is all there is); the rate and workers are this replica's stage's.
 */
export function documentStats(
  stats: IndexStats,
  lastIndexedAt: Date | null,
  engine: SearchIndex["engine"],
  model: string | null,
  stage: EmbedProgress | undefined,
) {
  const pending = model ? stats.chunks - stats.vectors : 0;
  return {
    total_documents: stats.documents,
    total_chunks: stats.chunks,
    embedded_chunks: stats.vectors,
    index_status: indexStatus(stats.chunks, pending),
    index_size_bytes: stats.sizeBytes,
    last_indexed_at: lastIndexedAt,
    engine,
    embedding_model: model,
    pending_chunks: pending,
    // Chunks/s over the last minute and batches at once, of this replica's stage (all accounts).
    embedding_rate: stage?.ratePerSecond ?? 0,
    embedding_workers: stage?.concurrency ?? 0,
  };
}

/** Document URLs listed or removed per internal call (a refresh's pruning pages through them). */
export const MAX_URLS_PER_CALL = 2000;
