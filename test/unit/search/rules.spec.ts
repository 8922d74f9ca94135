import { createHash } from "node:crypto";
import { HYBRID_ALPHA_BY_MODEL, searchConfig } from "../../../lib/search/config";
import { DEFAULT_HYBRID_ALPHA } from "../../../lib/search/fusion";
import type { ChunkHit } from "../../../lib/search/port";
import {
  bestFirst,
  candidateDepth,
  collapseByDocument,
  documentIdFor,
  documentResult,
  documentSummary,
  fusedScores,
  indexKey,
  parseSourceIds,
  planChunks,
  scoredDocumentPage,
  scoredSourceResults,
} from "../../../services/search/rules";

const hit = (documentId: string, score: number, position = 0): ChunkHit => ({
  id: `${documentId}-${position}`, sourceId: 1, documentId, position, title: "T", url: "u", content: "c", score,
});

/** The search service's two answers without a rerank stage: a page of documents, and the source-level chunk results. */
const documentSearchPage = (hits: ChunkHit[], offset: number, limit: number) => scoredDocumentPage(fusedScores(collapseByDocument(bestFirst(hits))), offset, limit);
const sourceSearchResults = (hits: ChunkHit[], minScore: number, limit: number) => scoredSourceResults(fusedScores(bestFirst(hits)), minScore, limit);

describe("search rules", () => {
  it("document ids are stable per (account, source, url) and differ across accounts", () => {
    expect(documentIdFor(1, 2, "https://a")).toBe(documentIdFor(1, 2, "https://a"));
    expect(documentIdFor(1, 2, "https://a")).not.toBe(documentIdFor(3, 2, "https://a"));
    expect(documentIdFor(1, 2, "https://a")).toMatch(/^[0-9a-f]{32}$/);
  });

  it("the index key changes with content, title or chunking, and chunk ids with their text", () => {
    const fixed = { size: 1000, overlap: 100, strategy: "fixed" } as const;
    const base = { title: "t", url: "u", contentHash: "h", chunking: fixed };
    expect(indexKey(base)).toBe(indexKey({ ...base }));
    expect(indexKey(base)).not.toBe(indexKey({ ...base, chunking: { ...fixed, size: 500 } }));
    expect(indexKey(base)).not.toBe(indexKey({ ...base, chunking: { ...fixed, strategy: "sentence" } }));
    // A reader's section marks change the chunks of the heading strategy only.
    const heading = { ...base, chunking: { ...fixed, strategy: "heading" as const } };
    expect(indexKey({ ...heading, sections: [5] })).not.toBe(indexKey(heading));
    expect(indexKey({ ...base, sections: [5] })).toBe(indexKey(base));
    // The key of a fixed-chunked document is the one it had before chunking was per source: nothing re-indexes.
    expect(indexKey(base)).toBe(createHash("sha256").update(JSON.stringify(["t", "u", "h", 1000, 100, "ranges"])).digest("hex"));
    const a = planChunks({ id: "d", title: "t", content: "one two" }, fixed, "m");
    const b = planChunks({ id: "d", title: "t", content: "one three" }, fixed, "m");
    expect(a[0]!.id).not.toBe(b[0]!.id);
    expect(a[0]!.embedKey).toMatch(/^m:[0-9a-f]{64}$/);
  });

  it("source ids: integers (or integer strings) pass, anything else matches nothing", () => {
    expect(parseSourceIds(undefined)).toBeUndefined();
    expect(parseSourceIds([1, "2", "x", -3, 1.5])).toEqual([1, 2]);
    expect(parseSourceIds(["abc"])).toEqual([]);
  });

  it("collapses chunk hits to documents at their best chunk and scores relative to the best", () => {
    const docs = collapseByDocument([hit("a", 8, 2), hit("b", 6), hit("a", 5, 0), hit("c", 2)]);
    expect(docs.map((d) => [d.documentId, d.position])).toEqual([["a", 2], ["b", 0], ["c", 0]]);
    expect(documentResult(docs[1]!, 8)).toMatchObject({ id: "b", score: 6, normalized_score: 75, chunk_index: 0 });
  });

  it("source-level results score 0..1 relative to the best and apply min_score then limit", () => {
    const res = sourceSearchResults([hit("a", 4), hit("b", 3), hit("c", 1)], 0.5, 10);
    expect(res.map((r) => r.score)).toEqual([1, 0.75]);
    expect(res[0]).toMatchObject({ content: "c", metadata: { title: "T", url: "u" } });
    expect(sourceSearchResults([hit("a", 4), hit("b", 3)], 0, 1)).toHaveLength(1);
  });

  it("results are best first whatever order the hits came in: a higher normalized_score never follows a lower one", () => {
    // An engine's order is not trusted: scores of a replica whose statistics or vectors lag can come in any order.
    const hits = [hit("a", 5), hit("b", 9, 1), hit("a", 7, 3), hit("c", 6), hit("b", 2)];
    const page = documentSearchPage(hits, 0, 10);
    expect(page.results.map((r) => [r.id, r.normalized_score, r.chunk_index])).toEqual([["b", 100, 1], ["a", 77.78, 3], ["c", 66.67, 0]]);
    expect(page.total).toBe(3);
    expect(documentSearchPage(hits, 1, 1).results.map((r) => [r.id, r.normalized_score])).toEqual([["a", 77.78]]);
    expect(sourceSearchResults([hit("a", 5), hit("b", 10)], 0, 10).map((r) => [r.metadata.document_id, r.score])).toEqual([["b", 1], ["a", 0.5]]);
  });

  it("ranks enough chunk candidates for the page, within 100..250", () => {
    expect(candidateDepth(0, 20)).toBe(100);
    expect(candidateDepth(40, 20)).toBe(180);
    expect(candidateDepth(500, 100)).toBe(250);
  });

  it("summaries carry a bounded content preview", () => {
    const s = documentSummary({ _id: "d", title: "t", url: "u", content: "x".repeat(500), source_id: 1, indexed_at: new Date(0), chunk_ids: ["c"] });
    expect(s.content_preview.length).toBeLessThanOrEqual(201);
    expect(s).toMatchObject({ id: "d", chunk_count: 1 });
    const summary = (content: string) => documentSummary({ _id: "d", title: "t", url: "u", content, source_id: 1, indexed_at: new Date(0), chunk_ids: [] }).content_preview;
    // 200 characters, an emoji being one: never cut in half, and text of exactly 200 kept whole.
    expect(summary("🧊".repeat(201))).toBe(`${"🧊".repeat(200)}…`);
    expect(summary("🧊".repeat(200))).toBe("🧊".repeat(200));
  });

  it("config: typesense when TYPESENSE_URL is set, embedded otherwise; alpha per model; bad values refused", () => {
    expect(searchConfig({}).engine).toBe("embedded");
    expect(searchConfig({ TYPESENSE_URL: "http://ts:8108" }).engine).toBe("typesense");
    expect(searchConfig({ TYPESENSE_URL: "http://ts:8108", SEARCH_ENGINE: "embedded" }).engine).toBe("embedded");
    expect(searchConfig({})).toMatchObject({ hybridAlpha: HYBRID_ALPHA_BY_MODEL["all-minilm-l6-v2"], embedding: { model: "all-minilm-l6-v2", dimensions: 384 } });
    expect(searchConfig({ EMBEDDING_MODEL: "use-lite-512" })).toMatchObject({ hybridAlpha: HYBRID_ALPHA_BY_MODEL["use-lite-512"], embedding: { dimensions: 512 } });
    expect(searchConfig({ EMBEDDING_PROVIDER: "openai", EMBEDDING_URL: "http://e" }).hybridAlpha).toBe(DEFAULT_HYBRID_ALPHA);
    expect(searchConfig({ HYBRID_ALPHA: "0.7" }).hybridAlpha).toBe(0.7);
    expect(() => searchConfig({ EMBEDDING_MODEL: "bert-large" })).toThrow(/EMBEDDING_MODEL/);
    expect(() => searchConfig({ HYBRID_ALPHA: "2" })).toThrow(/HYBRID_ALPHA/);
    expect(() => searchConfig({ EMBEDDING_PROVIDER: "openai" })).toThrow(/EMBEDDING_URL/);
    expect(searchConfig({ EMBEDDING_PROVIDER: "openai", EMBEDDING_URL: "http://e" }).maxDistance).toBe(2);
  });
});
