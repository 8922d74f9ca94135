import { searchConfig } from "../../../lib/search/config";
import { applyRerank, parseRerankResponse, rerankRequestBody, RerankError } from "../../../lib/search/rerank";
import type { ChunkHit } from "../../../lib/search/port";
import { rankingProblems, rerankedOrder, scoredDocumentPage } from "../../../services/search/rules";

const hit = (documentId: string, score: number): ChunkHit => ({ id: `${documentId}-0`, sourceId: 1, documentId, position: 0, title: "T", url: "u", content: "c", score });

describe("rerank stage", () => {
  it("reads the Cohere/Jina/vLLM answer and TEI's bare array", () => {
    expect(parseRerankResponse({ results: [{ index: 1, relevance_score: 0.9 }, { index: 0, relevance_score: 0.2 }] }, 2)).toEqual([
      { index: 1, score: 0.9 },
      { index: 0, score: 0.2 },
    ]);
    expect(parseRerankResponse([{ index: 0, score: 0.5 }], 1)).toEqual([{ index: 0, score: 0.5 }]);
  });

  it("refuses an answer of another shape, an index out of range or a missing score", () => {
    expect(() => parseRerankResponse({ data: [] }, 1)).toThrow(RerankError);
    expect(() => parseRerankResponse([{ index: 3, score: 1 }], 2)).toThrow(/out of range/);
    expect(() => parseRerankResponse([{ index: 0 }], 2)).toThrow(/no numeric score/);
  });

  it("sends each dialect's body; model only when configured", () => {
    expect(rerankRequestBody("cohere", "m", "q", ["a"], 1)).toEqual({ model: "m", query: "q", documents: ["a"], top_n: 1, return_documents: false });
    expect(rerankRequestBody("cohere", "", "q", ["a"], 1)).not.toHaveProperty("model");
    expect(rerankRequestBody("tei", "m", "q", ["a"], 1)).toEqual({ query: "q", texts: ["a"], raw_scores: false });
  });

  it("reorders the first top n, keeps the rest in fused order, and puts candidates the provider left out after the scored", () => {
    const order = applyRerank(["a", "b", "c", "d"], [{ index: 2, score: 0.9 }, { index: 0, score: 0.5 }], 3);
    expect(order).toEqual([
      { item: "c", score: 0.9 },
      { item: "a", score: 0.5 },
      { item: "b", score: null },
      { item: "d", score: null },
    ]);
  });

  it("scores reranked documents by the reranker and the rest 0, normalized against the first", () => {
    const page = scoredDocumentPage(rerankedOrder([hit("a", 3), hit("b", 2), hit("c", 1)], [{ index: 1, score: 0.8 }, { index: 0, score: 0.4 }], 2), 0, 10);
    expect(page.results.map((r) => [r.id, r.score, r.normalized_score])).toEqual([
      ["b", 0.8, 100],
      ["a", 0.4, 50],
      ["c", 0, 0],
    ]);
  });

  it("refuses knobs that would do nothing", () => {
    expect(rankingProblems({ hybrid_weight: 0.3 }, "hybrid", false)).toEqual([]);
    expect(rankingProblems({ hybrid_weight: 0.3 }, "keyword", false).map((p) => p.field)).toEqual(["hybrid_weight"]);
    expect(rankingProblems({ rerank: true }, "hybrid", false).map((p) => p.field)).toEqual(["rerank"]);
    expect(rankingProblems({ rerank: true, rerank_top_n: 5 }, "semantic", true)).toEqual([]);
    expect(rankingProblems({ rerank_top_n: 5 }, "hybrid", true).map((p) => p.field)).toEqual(["rerank_top_n"]);
  });

  it("is configured by env: off without RERANK_URL, bounded top n and timeout", () => {
    expect(searchConfig({}).rerank).toMatchObject({ url: "", api: "cohere", topN: 30, timeoutMs: 5000 });
    expect(searchConfig({ RERANK_URL: "http://r/rerank", RERANK_API: "tei", RERANK_TOP_N: "50" }).rerank).toMatchObject({ url: "http://r/rerank", api: "tei", topN: 50 });
    expect(() => searchConfig({ RERANK_TOP_N: "500" })).toThrow(/RERANK_TOP_N/);
    expect(() => searchConfig({ RERANK_API: "other" })).toThrow(/RERANK_API/);
  });
});
