import type { IndexedChunk } from "../../lib/search/port";
import { terms } from "../../lib/search/tokenizer";
import { candidateShares, CANDIDATE_BUDGET_FACTOR } from "../../lib/search/typesense/keyword";

/**
 * Whether Typesense promises the exact keyword top k of a scope: every query term's matching chunks in it fit the
 * term's share of the candidate budget (lib/search/typesense/keyword.ts). Beyond it the candidates are Typesense's
 * own best text matches, which may miss a chunk BM25 ranks higher (docs/adr/0049).
 */
export function keywordExact(chunks: IndexedChunk[], text: string, depth: number, inScope: (c: IndexedChunk) => boolean): boolean {
  const chunkTerms = new Map(chunks.map((c) => [c.id, new Set([...terms(c.title), ...terms(c.content)])]));
  const queryTerms = [...new Set(terms(text))];
  const count = (t: string, only: (c: IndexedChunk) => boolean) => chunks.filter((c) => only(c) && chunkTerms.get(c.id)!.has(t)).length;
  const df = new Map(queryTerms.map((t) => [t, count(t, () => true)]));
  const scoped = new Map(queryTerms.map((t) => [t, count(t, inScope)]));
  const shares = candidateShares(df, chunks.length, Math.ceil(CANDIDATE_BUDGET_FACTOR * depth), scoped);
  return [...shares].every(([t, share]) => scoped.get(t)! <= share);
}
