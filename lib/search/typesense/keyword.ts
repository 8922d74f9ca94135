import { bm25Idf, bm25Term, TITLE_WEIGHT } from "../bm25";
import type { Batch } from "./batch";
import type { ChunkDocument } from "./schema";

/**
 * Keyword candidates fetched per query term: all `depth` for queries of up to three terms (exact BM25 top
 * list whenever a term's matches fit in it), fewer for long queries, never under this floor. Typesense
 * parses every returned hit's stored document, so returned hits, not matching, are what a query costs.
 */
const MIN_CANDIDATES_PER_TERM = 50;
const FULL_CANDIDATE_TERMS = 3;
/**
 * How long an account's chunk count and total length are reused. This engine's own writes clear them at
 * once; a write through another replica shows in scores after at most this long (which hits match does
 * not wait: matching is Typesense's).
 */
export const TOTALS_TTL_MS = 1000;

/**
 * What a hit shows. Keyword candidates bring it along: Typesense's cost is per returned hit, hardly per
 * byte, so a second read of the final hits' text would cost more than carrying it.
 */
export const HIT_FIELDS = "id,source_id,document_id,position,title,url,content";
/** What BM25 needs of a candidate besides: its terms (for term frequencies) and its length. */
export const CANDIDATE_FIELDS = `${HIT_FIELDS},term_count,title_terms,content_terms`;
export type Candidate = Pick<ChunkDocument, "id" | "source_id" | "document_id" | "position" | "title" | "url" | "content" | "term_count" | "title_terms" | "content_terms">;

/** The account's BM25 population (the embedded engine's per-account index): chunk count and total length. */
export interface Totals {
  chunks: number;
  length: number;
}

/** Totals per account, reused for TOTALS_TTL_MS and dropped by the engine's own writes to the account. */
export class TotalsCache {
  private readonly entries = new Map<number, Totals & { at: number }>();
  /** Counts forget() calls: totals read before a write must not be kept after it. */
  generation = 0;

  get(accountId: number, now = Date.now()): Totals | undefined {
    const e = this.entries.get(accountId);
    if (e && now - e.at < TOTALS_TTL_MS) return e;
    if (e) this.entries.delete(accountId);
    return undefined;
  }

  /** Keeps totals read when the cache was at `readAt` (its generation), unless a write came since. */
  set(accountId: number, totals: Totals, readAt: number, now = Date.now()) {
    if (readAt === this.generation) this.entries.set(accountId, { ...totals, at: now });
  }

  forget(accountId: number) {
    this.entries.delete(accountId);
    this.generation++;
  }
}

/** Candidates per query term for a query of `termCount` terms ranking `perPage` chunks. */
function candidatesPerTerm(perPage: number, termCount: number): number {
  return Math.min(perPage, Math.max(MIN_CANDIDATES_PER_TERM, Math.ceil((FULL_CANDIDATE_TERMS * perPage) / termCount)));
}

/** The BM25 term frequencies of a chunk, from its stored terms, as the embedded index counts them. */
function termFrequencies(d: Pick<ChunkDocument, "title_terms" | "content_terms">): Map<string, number> {
  const tf = new Map<string, number>();
  for (const t of d.title_terms.split(" ")) if (t) tf.set(t, (tf.get(t) ?? 0) + TITLE_WEIGHT);
  for (const t of d.content_terms.split(" ")) if (t) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}

export interface KeywordHit {
  id: string;
  score: number;
  document: Candidate;
}

/**
 * BM25 of the candidates with the account's statistics (document frequency per query term), best first,
 * ties by id as fusion breaks them; at most `perPage`.
 */
export function rankCandidates(candidates: Iterable<Candidate>, documentFrequency: Map<string, number>, totals: Totals, perPage: number): KeywordHit[] {
  if (!totals.chunks || !totals.length) return [];
  const avgLength = totals.length / totals.chunks;
  const idf = new Map<string, number>();
  // Another replica's write can make a fresh df exceed cached totals for a moment: never a negative idf.
  for (const [term, df] of documentFrequency) if (df) idf.set(term, bm25Idf(Math.max(totals.chunks, df), df));
  const ranked: KeywordHit[] = [];
  for (const c of candidates) {
    const tf = termFrequencies(c);
    let score = 0;
    for (const [term, weight] of idf) {
      const f = tf.get(term);
      if (f) score += bm25Term(f, weight, c.term_count, avgLength);
    }
    if (score > 0) ranked.push({ id: c.id, score, document: c });
  }
  ranked.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return ranked.slice(0, perPage);
}

/** Where a query's keyword searches look: the chunks collection, the account's filter and the scope's. */
export interface KeywordScope {
  accountId: number;
  collection: string;
  account: string;
  scoped: string;
}

/**
 * The keyword searches of a query, added to `batch`: the account's chunk count and total length unless
 * cached, then per query term its document frequency in the account and the scope's chunks that contain it
 * (with their terms and what a hit shows), as many as the per-term share allows (Typesense has no OR of
 * terms: a multi-term query drops terms from its ends only). Returns the BM25 ranking, to call after the
 * batch has run, without the chunks a replacement hides.
 */
export function keywordSearches(batch: Batch, totals: TotalsCache, where: KeywordScope, queryTerms: string[], perPage: number): (hidden: Set<string>) => KeywordHit[] {
  const { accountId, collection, account, scoped } = where;
  const match = {
    collection, query_by: "title_terms,content_terms", prefix: "false", num_typos: 0, typo_tokens_threshold: 0, drop_tokens_threshold: 0,
    highlight_fields: "none", enable_highlight_v1: false,
  };
  const perTerm = candidatesPerTerm(perPage, queryTerms.length);
  const cached = totals.get(accountId);
  const generation = totals.generation;
  const population = cached ? undefined : batch.add({ collection, q: "*", filter_by: account, facet_by: "term_count", max_facet_values: 1, per_page: 0 });
  const lists = queryTerms.map((t) => ({
    term: t,
    frequency: scoped !== account ? batch.add({ ...match, q: t, filter_by: account, per_page: 0 }) : undefined,
    candidates: batch.add<Candidate>({ ...match, q: t, filter_by: scoped, include_fields: CANDIDATE_FIELDS, per_page: perTerm }),
  }));
  return (hidden) => {
    let current = cached;
    if (!current) {
      const r = population!();
      current = { chunks: r.found, length: r.facet_counts?.find((f) => f.field_name === "term_count")?.stats?.sum ?? 0 };
      totals.set(accountId, current, generation);
    }
    const documentFrequency = new Map<string, number>();
    const candidates = new Map<string, Candidate>();
    for (const list of lists) {
      const found = list.candidates();
      documentFrequency.set(list.term, (list.frequency ?? list.candidates)().found);
      for (const h of found.hits ?? []) if (!hidden.has(h.document.id)) candidates.set(h.document.id, h.document);
    }
    return rankCandidates(candidates.values(), documentFrequency, current, perPage);
  };
}
