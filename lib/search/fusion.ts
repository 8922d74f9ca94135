/** Prior weight of the vector list for models not calibrated: even; each query's confidences then decide. */
export const DEFAULT_HYBRID_ALPHA = 0.5;

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
  /** 1-based keyword rank, absent when only the vector list found it. */
  keywordRank?: number;
  /** 1-based vector rank, absent when only the keyword list found it. */
  vectorRank?: number;
  textScore?: number;
  distance?: number;
}

/** How a list's scores are put on 0..1 and how sure the list is of its best hit. */
interface ListScale {
  lowest: number;
  highest: number;
  /** How far the best score stands above the list: (best - mean) / standard deviation. */
  confidence: number;
}

/** Null when the list cannot say (fewer than two different scores): its hits then count 1 and the prior weights stand. */
function scaleOf(scores: number[]): ListScale | null {
  if (scores.length < 2) return null;
  let sum = 0;
  let lowest = Infinity;
  let highest = -Infinity;
  for (const x of scores) {
    sum += x;
    lowest = Math.min(lowest, x);
    highest = Math.max(highest, x);
  }
  if (!(highest > lowest)) return null;
  const mean = sum / scores.length;
  const sd = Math.sqrt(scores.reduce((s, x) => s + (x - mean) ** 2, 0) / scores.length);
  return { lowest, highest, confidence: (highest - mean) / sd };
}

const scaled = (scale: ListScale | null, x: number) => (scale ? (x - scale.lowest) / (scale.highest - scale.lowest) : 1);

/**
 * Hybrid fusion that follows, per query, the list that is surer of itself (docs/search.md, decision 38). Each
 * list's scores are scaled to 0..1 over the list (BM25 for keyword, cosine similarity for vectors; a chunk a
 * list did not find counts 0 there), and the fused score is wK·keyword + wV·vector with
 *   wK ∝ (1 − alpha) · cK²,  wV ∝ alpha · cV²,  wK + wV = 1,
 * where c is how far the list's best score stands above the list ((best − mean) / standard deviation). A list
 * whose top is flat (a definition sharing a few common words with many chunks) gives way to one with a clear
 * winner, whichever side that is; alpha is the prior between them. Ties keep keyword order, then id.
 */
export function fuseLists(keyword: KeywordCandidate[], vector: VectorCandidate[], alpha = DEFAULT_HYBRID_ALPHA): FusedCandidate[] {
  const keywordScale = scaleOf(keyword.map((h) => h.score));
  const vectorScale = scaleOf(vector.map((h) => 1 - h.distance));
  let wK = 1 - alpha;
  let wV = alpha;
  if (keywordScale && vectorScale) {
    wK *= keywordScale.confidence ** 2;
    wV *= vectorScale.confidence ** 2;
  }
  const total = wK + wV || 1;
  wK /= total;
  wV /= total;
  const fused = new Map<string, FusedCandidate>();
  keyword.forEach((hit, index) => {
    fused.set(hit.id, { id: hit.id, score: wK * scaled(keywordScale, hit.score), keywordRank: index + 1, textScore: hit.score });
  });
  vector.forEach((hit, index) => {
    const part = wV * scaled(vectorScale, 1 - hit.distance);
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
