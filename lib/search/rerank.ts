/*
 * The optional rerank stage (docs/adr/0056-rerank-and-hybrid-weight.md): after fusion, the best candidates are
 * scored again by a cross-encoder behind the `/rerank` API shape that TEI, Jina, Cohere and vLLM serve.
 */

/** One reranked candidate: its position in the documents sent, and the reranker's score (higher is better). */
export interface RerankHit {
  index: number;
  score: number;
}

/** The stage's provider: scores documents against a query, best first, at most topN of them. */
export interface Reranker {
  readonly model: string;
  rerank(query: string, documents: string[], topN: number): Promise<RerankHit[]>;
}

/** The request body's dialect: `documents` (Cohere, Jina, vLLM) or `texts` (Hugging Face TEI). */
export const RERANK_APIS = ["cohere", "tei"] as const;
export type RerankApi = (typeof RERANK_APIS)[number];

export interface HttpRerankerOptions {
  /** The full endpoint, e.g. http://tei:8080/rerank or https://api.cohere.com/v2/rerank. */
  url: string;
  model: string;
  apiKey: string;
  api: RerankApi;
  timeoutMs: number;
}

/** A provider answered badly or not at all (the stage then fails open; see the ADR). */
export class RerankError extends Error {
  override name = "RerankError";
}

/** The scores of either answer shape: `{results: [{index, relevance_score}]}` or TEI's bare `[{index, score}]`. */
export function parseRerankResponse(body: unknown, documents: number): RerankHit[] {
  const rows = Array.isArray(body) ? body : (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(rows)) throw new RerankError("rerank answer has neither a results array nor is an array");
  return rows.map((row: { index?: unknown; relevance_score?: unknown; score?: unknown }) => {
    const index = row?.index;
    const score = row?.relevance_score ?? row?.score;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= documents) throw new RerankError(`rerank answer has an index out of range: ${String(index)}`);
    if (typeof score !== "number" || !Number.isFinite(score)) throw new RerankError(`rerank answer has no numeric score for index ${String(index)}`);
    return { index: index as number, score };
  });
}

/** The body each dialect expects; `model` only when one is configured (TEI serves one model and needs none). */
export function rerankRequestBody(api: RerankApi, model: string, query: string, documents: string[], topN: number): Record<string, unknown> {
  if (api === "tei") return { query, texts: documents, raw_scores: false };
  return { ...(model ? { model } : {}), query, documents, top_n: topN, return_documents: false };
}

/** An HTTP `/rerank` provider; every failure (status, timeout, shape) is a RerankError. */
export function httpReranker(options: HttpRerankerOptions): Reranker {
  return {
    model: options.model || options.url,
    async rerank(query, documents, topN) {
      if (!documents.length) return [];
      let res: Response;
      try {
        res = await fetch(options.url, {
          method: "POST",
          headers: { "content-type": "application/json", ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify(rerankRequestBody(options.api, options.model, query, documents, topN)),
          signal: AbortSignal.timeout(options.timeoutMs),
        });
      } catch (err) {
        throw new RerankError(`rerank endpoint unreachable: ${(err as Error).message}`);
      }
      if (!res.ok) throw new RerankError(`rerank endpoint answered ${res.status}: ${(await res.text().catch(() => "")).slice(0, 200)}`);
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        throw new RerankError("rerank endpoint answered with something other than JSON");
      }
      return bestFirst(parseRerankResponse(body, documents.length)).slice(0, topN);
    },
  };
}

/** Best first, each index once (a provider that repeats one keeps its first score); ties by position. */
function bestFirst(hits: RerankHit[]): RerankHit[] {
  const seen = new Set<number>();
  return hits.filter((h) => !seen.has(h.index) && seen.add(h.index)).sort((a, b) => b.score - a.score || a.index - b.index);
}

/**
 * A ranked list with its first `topN` items in the reranker's order; the rest follow in the order they had. The
 * reranked items carry the reranker's score, the others `tailScore` (they were not judged again). Candidates a
 * provider leaves out of its answer keep their place after the ones it scored.
 */
export function applyRerank<T>(ranked: T[], hits: RerankHit[], topN: number): { item: T; score: number | null }[] {
  const head = ranked.slice(0, topN);
  const scored = hits.filter((h) => h.index < head.length);
  const used = new Set(scored.map((h) => h.index));
  return [
    ...scored.map((h) => ({ item: head[h.index]!, score: h.score })),
    ...head.flatMap((item, i) => (used.has(i) ? [] : [{ item, score: null }])),
    ...ranked.slice(topN).map((item) => ({ item, score: null })),
  ];
}
