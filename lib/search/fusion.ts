/** Typesense's default weight of the vector list in hybrid rank fusion. */
export const DEFAULT_HYBRID_ALPHA = 0.3;

export interface KeywordCandidate {
  id: string;
  /** Text match score; higher is better. */
  score: number;
}

export interface VectorCandidate {
  id: string;
  /** Cosine distance 0..2; lower is better. */
  distance: number;
}

export interface FusedCandidate {
  id: string;
  score: number;
  /** 1-based dense keyword rank (ties share a rank), absent when only the vector list found it. */
  keywordRank?: number;
  /** 1-based vector rank, absent when only the keyword list found it. */
  vectorRank?: number;
  textScore?: number;
  distance?: number;
}

/**
 * Rank fusion exactly as Typesense does it (src/index.cpp): a keyword hit adds (1 - alpha) / rank, where
 * rank is dense (equal text scores share it), a vector hit adds alpha / rank, where rank is the position in
 * the nearest-neighbour list. Lists come best first. Ties of the fused score keep keyword order, then id.
 */
export function fuseRanks(keyword: KeywordCandidate[], vector: VectorCandidate[], alpha = DEFAULT_HYBRID_ALPHA): FusedCandidate[] {
  const fused = new Map<string, FusedCandidate>();
  let rank = 0;
  let last = Number.POSITIVE_INFINITY;
  for (const hit of keyword) {
    if (hit.score < last) rank++;
    last = hit.score;
    fused.set(hit.id, { id: hit.id, score: (1 - alpha) / rank, keywordRank: rank, textScore: hit.score });
  }
  vector.forEach((hit, index) => {
    const part = alpha / (index + 1);
    const existing = fused.get(hit.id);
    if (existing) {
      existing.score += part;
      existing.vectorRank = index + 1;
      existing.distance = hit.distance;
    } else {
      fused.set(hit.id, { id: hit.id, score: part, vectorRank: index + 1, distance: hit.distance });
    }
  });
  return [...fused.values()].sort(
    (a, b) =>
      b.score - a.score ||
      (a.keywordRank ?? Number.MAX_SAFE_INTEGER) - (b.keywordRank ?? Number.MAX_SAFE_INTEGER) ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** 0..100 where the best hit of the whole ranking is 100; raw scores of every mode are positive. */
export function normalizedScore(score: number, best: number): number {
  if (!(best > 0) || !(score > 0)) return 0;
  return Math.max(0, Math.min(100, Math.round((100 * score) / best * 100) / 100));
}
