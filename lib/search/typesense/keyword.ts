import { bm25Idf, bm25Term, TITLE_WEIGHT } from "../bm25";
import type { Batch } from "./batch";
import type { ChunkDocument } from "./schema";

/**
 * Keyword candidates fetched per query, as a multiple of the ranking's depth, shared among the query's terms
 * by their idf (docs/search.md decision 39, ADR 0049): a returned hit is what a Typesense search costs
 * (~50-100 µs of its CPU each, whatever include_fields keeps), so the budget, not the number of terms, sets
 * a query's cost. A term whose matches fit in its share brings them all and leaves the rest to the others;
 * every term with a match gets at least MIN_CANDIDATES_PER_TERM; none more than Typesense's per_page ceiling.
 */
export const CANDIDATE_BUDGET_FACTOR = 2;
export const MIN_CANDIDATES_PER_TERM = 10;
const MAX_PER_PAGE = 250;
/** Title matches first (title terms count twice in BM25), then the shortest chunks: BM25's order for one term, tf aside. */
const TERM_ORDER = { query_by: "title_terms,content_terms", query_by_weights: "2,1", sort_by: "_text_match:desc,term_count:asc" };
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
export const HIT_FIELDS = "id,source_id,document_id,position,title,url,content,chunk_start,chunk_end";
/** What BM25 needs of a candidate besides: its terms (for term frequencies) and its length. */
export const CANDIDATE_FIELDS = `${HIT_FIELDS},term_count,title_terms,content_terms`;
export type Candidate = Pick<ChunkDocument, "id" | "source_id" | "document_id" | "position" | "title" | "url" | "content" | "chunk_start" | "chunk_end" | "term_count" | "title_terms" | "content_terms">;

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

/**
 * Candidates per query term (per_page): the budget shared by idf, water-filled (a term whose document
 * frequency is within its share takes all its matches, and what it leaves is shared again among the others). When all matches
 * fit in the budget every term takes them all, and the ranking is the exact BM25 top list. `inScope` is each
 * term's matches in the query's scope (sources, filter) when narrower than the account: what a term can
 * bring, so a selective scope's matches fit (and rank exactly) though the account's would not.
 */
export function candidateShares(documentFrequency: Map<string, number>, chunks: number, budget: number, inScope = documentFrequency): Map<string, number> {
  const shares = new Map<string, number>();
  let open = [...documentFrequency]
    .map(([term, accountDf]) => ({ term, df: inScope.get(term) ?? 0, idf: bm25Idf(Math.max(chunks, accountDf), accountDf) }))
    .filter((t) => t.df > 0);
  let left = budget;
  for (;;) {
    const sum = open.reduce((s, t) => s + t.idf, 0);
    const share = (t: (typeof open)[number]) => Math.min(MAX_PER_PAGE, Math.max(MIN_CANDIDATES_PER_TERM, Math.floor((left * t.idf) / (sum || 1))));
    const fits = open.filter((t) => t.df <= share(t));
    if (!fits.length) {
      for (const t of open) shares.set(t.term, share(t));
      return shares;
    }
    // A fitting term is asked for its whole share (Typesense returns only its matches, so it costs its df):
    // a page of exactly df could lose a visible chunk to one a replacement added and hides meanwhile.
    const offered = fits.map((t) => share(t));
    fits.forEach((t, i) => {
      shares.set(t.term, offered[i]!);
      left = Math.max(0, left - t.df);
    });
    open = open.filter((t) => !fits.includes(t));
  }
}

/** The BM25 term frequencies of the query's terms in a chunk, from its stored terms, as the embedded index counts them. */
function termFrequencies(d: Pick<ChunkDocument, "title_terms" | "content_terms">, queryTerms: Map<string, number>): Map<string, number> {
  const tf = new Map<string, number>();
  for (const t of d.title_terms.split(" ")) if (queryTerms.has(t)) tf.set(t, (tf.get(t) ?? 0) + TITLE_WEIGHT);
  for (const t of d.content_terms.split(" ")) if (queryTerms.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
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
    const tf = termFrequencies(c, idf);
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

/** One analysed term, matched exactly: no prefix, no typo, no token dropping, no highlight. */
const MATCH = {
  prefix: "false", num_typos: 0, typo_tokens_threshold: 0, drop_tokens_threshold: 0, highlight_fields: "none", enable_highlight_v1: false,
};

/** Where a query's keyword searches look: the chunks collection, the account's filter and the scope's (sources, metadata filter). */
export interface KeywordScope {
  accountId: number;
  collection: string;
  account: string;
  scoped: string;
}

/**
 * What the first round of a keyword query learns: the account's population and each term's document frequency
 * (BM25's statistics stay the account's whatever the scope, as the embedded engine keeps its partition's), and
 * each term's matches in the scope when it is narrower (what sizes the candidate lists).
 */
export interface TermStatistics {
  totals: Totals;
  documentFrequency: Map<string, number>;
  inScope?: Map<string, number>;
}

/**
 * The first round of a query's keyword search, added to `batch`: the account's chunk count and total length
 * unless cached, and per query term its document frequency in the account and, for a scope narrower than the
 * account (sources, a filter), in the scope (per_page 0: no hit is read). Returns the statistics, to read after
 * the batch has run.
 */
export function termStatistics(batch: Batch, totals: TotalsCache, where: KeywordScope, queryTerms: string[]): () => TermStatistics {
  const { accountId, collection, account, scoped } = where;
  const cached = totals.get(accountId);
  const generation = totals.generation;
  const population = cached ? undefined : batch.add({ collection, q: "*", filter_by: account, facet_by: "term_count", max_facet_values: 1, per_page: 0 });
  const count = (t: string, filter_by: string) => batch.add({ ...MATCH, collection, q: t, query_by: TERM_ORDER.query_by, filter_by, per_page: 0 });
  const frequencies = queryTerms.map((t) => ({ term: t, found: count(t, account), inScope: scoped !== account ? count(t, scoped) : undefined }));
  return () => {
    let current = cached;
    if (!current) {
      const r = population!();
      current = { chunks: r.found, length: r.facet_counts?.find((f) => f.field_name === "term_count")?.stats?.sum ?? 0 };
      totals.set(accountId, current, generation);
    }
    const documentFrequency = new Map(frequencies.map((f) => [f.term, f.found().found]));
    if (scoped === account) return { totals: current, documentFrequency };
    return { totals: current, documentFrequency, inScope: new Map(frequencies.map((f) => [f.term, f.inScope!().found])) };
  };
}

/**
 * The second round, added to `batches` (requests that run side by side): per query term with a match, the scope's chunks that contain it (with
 * their terms and what a hit shows), title matches and short chunks first, as many as its share of the
 * budget (Typesense has no OR of terms: a multi-term query drops terms from its ends only, so one search
 * would miss chunks matching middle terms). Returns the BM25 ranking, to call after the batch has run,
 * without the chunks a replacement hides; undefined when no term matches.
 */
export function keywordCandidates(batches: Batch[], where: KeywordScope, stats: TermStatistics, perPage: number): ((hidden: Set<string>) => KeywordHit[]) | undefined {
  const inScope = stats.inScope ?? stats.documentFrequency;
  const shares = candidateShares(stats.documentFrequency, stats.totals.chunks, Math.ceil(CANDIDATE_BUDGET_FACTOR * perPage), inScope);
  if (!shares.size) return undefined;
  // Largest shares first, each to the batch with the fewest hits asked so far (the batches run side by side).
  const load = batches.map(() => 0);
  const lists = [...shares].sort((a, b) => b[1] - a[1]).map(([t, share]) => {
    const i = load.indexOf(Math.min(...load));
    load[i]! += Math.min(share, inScope.get(t) ?? share);
    return batches[i]!.add<Candidate>({ ...MATCH, ...TERM_ORDER, collection: where.collection, q: t, filter_by: where.scoped, include_fields: CANDIDATE_FIELDS, per_page: share });
  });
  return (hidden) => {
    const candidates = new Map<string, Candidate>();
    for (const list of lists) for (const h of list().hits ?? []) if (!hidden.has(h.document.id)) candidates.set(h.document.id, h.document);
    return rankCandidates(candidates.values(), stats.documentFrequency, stats.totals, perPage);
  };
}
