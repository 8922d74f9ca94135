/** BM25 term-frequency saturation (Lucene's and Typesense-independent default). */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;
/** A title term counts this many times a body term, so a page about X ranks above a page mentioning X. */
export const TITLE_WEIGHT = 2;
/** Lucene's BM25 idf of a term found in `df` of `n` chunks. */
export function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** One term's BM25 contribution to a chunk of `length` terms (title terms counted TITLE_WEIGHT times). */
export function bm25Term(tf: number, idf: number, length: number, avgLength: number): number {
  return (idf * tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength));
}

/** Postings of removed chunks are dropped once they are this share of all postings. */
const COMPACT_RATIO = 0.25;

export interface KeywordMatches {
  /** Slots of the best matches, best first. */
  slots: number[];
  scores: number[];
  /** Number of slots that matched at least one query term (before the top-k cut). */
  total: number;
}

/** A growable list of (slot, term frequency) postings for one term. */
class Postings {
  slots = new Int32Array(4);
  tfs = new Uint16Array(4);
  length = 0;

  push(slot: number, tf: number) {
    if (this.length === this.slots.length) {
      const slots = new Int32Array(this.length * 2);
      slots.set(this.slots);
      this.slots = slots;
      const tfs = new Uint16Array(this.length * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
    }
    this.slots[this.length] = slot;
    this.tfs[this.length] = Math.min(tf, 0xffff);
    this.length++;
  }
}

/** Min-heap of (score, slot) keeping the k best; ties keep the lower slot (older chunk) first. */
class TopK {
  private scores: Float64Array;
  private slots: Int32Array;
  size = 0;
  constructor(private readonly k: number) {
    this.scores = new Float64Array(k);
    this.slots = new Int32Array(k);
  }
  private worse(i: number, j: number) {
    return this.scores[i]! < this.scores[j]! || (this.scores[i] === this.scores[j] && this.slots[i]! > this.slots[j]!);
  }
  private swap(i: number, j: number) {
    const s = this.scores[i]!;
    this.scores[i] = this.scores[j]!;
    this.scores[j] = s;
    const t = this.slots[i]!;
    this.slots[i] = this.slots[j]!;
    this.slots[j] = t;
  }
  offer(score: number, slot: number) {
    if (this.size < this.k) {
      let i = this.size++;
      this.scores[i] = score;
      this.slots[i] = slot;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(i, p)) break;
        this.swap(i, p);
        i = p;
      }
      return;
    }
    if (score < this.scores[0]! || (score === this.scores[0] && slot > this.slots[0]!)) return;
    this.scores[0] = score;
    this.slots[0] = slot;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.size && this.worse(l, m)) m = l;
      if (r < this.size && this.worse(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }
  /** Best first. */
  drain(): { slots: number[]; scores: number[] } {
    const order = Array.from({ length: this.size }, (_, i) => i).sort(
      (a, b) => this.scores[b]! - this.scores[a]! || this.slots[a]! - this.slots[b]!,
    );
    return { slots: order.map((i) => this.slots[i]!), scores: order.map((i) => this.scores[i]!) };
  }
}

/** A keyword index's postings in compact form: what a snapshot stores and what compaction leaves in memory. */
export interface KeywordSnapshot {
  /** Terms with at least one live posting. */
  vocabulary: string[];
  /** Postings of vocabulary[t] are at [offsets[t], offsets[t + 1]). */
  offsets: Int32Array;
  slots: Int32Array;
  tfs: Uint16Array;
}

/**
 * An in-memory BM25 inverted index over integer slots, with postings in typed arrays. Queries are scored
 * term-at-a-time into a reused accumulator, with stop words already gone from both sides, so a query
 * touches only the postings of its few content terms; a bounded heap keeps the top k.
 *
 * Postings live in one compact arena per index (every term's list contiguous, no slack, no object per
 * term: what a snapshot load or a compaction leaves) plus small growable lists for postings added since.
 * The index keeps no per-slot term lists: removing a slot takes its terms again from the caller (who
 * re-tokenises the chunk), which saves about four bytes per posting.
 */
export class KeywordIndex {
  private readonly termIds = new Map<string, number>();
  private terms: string[] = [];
  private baseStart = new Int32Array(1024);
  private baseLength = new Int32Array(1024);
  private baseSlots: Int32Array<ArrayBufferLike> = new Int32Array(0);
  private baseTfs: Uint16Array<ArrayBufferLike> = new Uint16Array(0);
  private extra: (Postings | undefined)[] = [];
  /** Live document frequency per term. */
  private df = new Int32Array(1024);
  private docLength = new Float32Array(1024);
  private alive = new Uint8Array(1024);
  private accumulator = new Float64Array(1024);
  private liveDocs = 0;
  private totalLength = 0;
  private deadPostings = 0;
  private totalPostings = 0;

  /** Number of live (searchable) slots. */
  get size(): number {
    return this.liveDocs;
  }

  /** Rough bytes held by postings, per-slot tables and the vocabulary. */
  get sizeBytes(): number {
    return this.totalPostings * 6 + this.docLength.length * 13 + this.termIds.size * 64;
  }

  private ensureSlot(slot: number) {
    if (slot < this.alive.length) return;
    let n = this.alive.length;
    while (n <= slot) n *= 2;
    const grow = <T extends Float32Array | Uint8Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.alive = grow(this.alive, (k) => new Uint8Array(k));
    this.docLength = grow(this.docLength, (k) => new Float32Array(k));
    this.accumulator = new Float64Array(n);
  }

  private ensureTerms(n: number) {
    if (n <= this.df.length) return;
    let size = this.df.length;
    while (size < n) size *= 2;
    for (const key of ["df", "baseStart", "baseLength"] as const) {
      const grown = new Int32Array(size);
      grown.set(this[key]);
      this[key] = grown;
    }
  }

  private termId(term: string): number {
    let id = this.termIds.get(term);
    if (id === undefined) {
      id = this.terms.length;
      this.termIds.set(term, id);
      this.terms.push(term);
      this.ensureTerms(id + 1);
    }
    return id;
  }

  /** Indexes a slot from its (already tokenised) title and body terms; a slot is added once. */
  add(slot: number, titleTerms: string[], bodyTerms: string[]) {
    this.ensureSlot(slot);
    if (this.alive[slot]) throw new Error(`slot ${slot} is already indexed`);
    const counts = new Map<string, number>();
    for (const t of titleTerms) counts.set(t, (counts.get(t) ?? 0) + TITLE_WEIGHT);
    for (const t of bodyTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    let length = 0;
    for (const [term, tf] of counts) {
      const id = this.termId(term);
      (this.extra[id] ??= new Postings()).push(slot, tf);
      this.df[id]!++;
      length += tf;
    }
    this.docLength[slot] = length;
    this.alive[slot] = 1;
    this.liveDocs++;
    this.totalLength += length;
    this.totalPostings += counts.size;
  }

  /**
   * Removes a slot from ranking at once, given the same terms it was added with; its postings are reclaimed
   * by a later compaction.
   */
  remove(slot: number, titleTerms: string[], bodyTerms: string[]) {
    if (!this.kill(slot)) return;
    const unique = new Set(titleTerms);
    for (const t of bodyTerms) unique.add(t);
    let negative = false;
    for (const term of unique) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      if (--this.df[id]! < 0) negative = true;
    }
    this.deadPostings += unique.size;
    // Only a tokenizer that changed under a running index could get here; the postings are the truth.
    if (negative) this.recountDocumentFrequencies();
    this.maybeCompact();
  }

  /** Removes many slots at once: marks them and recounts document frequencies from the postings. */
  removeMany(slots: Iterable<number>) {
    let removed = 0;
    for (const slot of slots) if (this.kill(slot)) removed++;
    if (!removed) return;
    this.recountDocumentFrequencies();
    this.maybeCompact();
  }

  private kill(slot: number): boolean {
    if (slot >= this.alive.length || !this.alive[slot]) return false;
    this.alive[slot] = 0;
    this.liveDocs--;
    this.totalLength -= this.docLength[slot]!;
    return true;
  }

  /** Document frequencies and the dead-posting count, from the postings and the live slots. */
  private recountDocumentFrequencies() {
    let live = 0;
    for (let id = 0; id < this.terms.length; id++) {
      let n = 0;
      const start = this.baseStart[id]!;
      const end = start + this.baseLength[id]!;
      for (let i = start; i < end; i++) if (this.alive[this.baseSlots[i]!]) n++;
      const extra = this.extra[id];
      if (extra) for (let i = 0; i < extra.length; i++) if (this.alive[extra.slots[i]!]) n++;
      this.df[id] = n;
      live += n;
    }
    this.deadPostings = this.totalPostings - live;
  }

  private maybeCompact() {
    if (this.deadPostings > COMPACT_RATIO * this.totalPostings && this.deadPostings > 10_000) this.compact();
  }

  /** Rewrites all postings into one exact-size arena without the removed slots' postings. */
  compact() {
    let total = 0;
    for (let id = 0; id < this.terms.length; id++) total += this.df[id]!;
    const slots = new Int32Array(total);
    const tfs = new Uint16Array(total);
    let w = 0;
    for (let id = 0; id < this.terms.length; id++) {
      const from = w;
      const start = this.baseStart[id]!;
      const end = start + this.baseLength[id]!;
      for (let i = start; i < end; i++) {
        const slot = this.baseSlots[i]!;
        if (this.alive[slot]) {
          slots[w] = slot;
          tfs[w++] = this.baseTfs[i]!;
        }
      }
      const extra = this.extra[id];
      if (extra) {
        for (let i = 0; i < extra.length; i++) {
          const slot = extra.slots[i]!;
          if (this.alive[slot]) {
            slots[w] = slot;
            tfs[w++] = extra.tfs[i]!;
          }
        }
      }
      this.baseStart[id] = from;
      this.baseLength[id] = w - from;
    }
    this.baseSlots = slots;
    this.baseTfs = tfs;
    this.extra = [];
    this.totalPostings = w;
    this.deadPostings = 0;
  }

  /** Document lengths of the given slots (for a snapshot). */
  lengthsOf(slots: Int32Array): Float32Array {
    return Float32Array.from(slots, (slot) => this.docLength[slot]!);
  }

  /** The postings in compact form (compacting first, so memory holds that form too from now on). */
  snapshot(): KeywordSnapshot {
    this.compact();
    const vocabulary: string[] = [];
    const offsets: number[] = [0];
    for (let id = 0; id < this.terms.length; id++) {
      if (!this.baseLength[id]) continue;
      vocabulary.push(this.terms[id]!);
      offsets.push(this.baseStart[id]! + this.baseLength[id]!);
    }
    return { vocabulary, offsets: Int32Array.from(offsets), slots: this.baseSlots, tfs: this.baseTfs };
  }

  /** An index over `live` slots (with their document lengths) from a snapshot's postings. */
  static restore(snapshot: KeywordSnapshot, live: Int32Array, docLengths: Float32Array, slotCount: number): KeywordIndex {
    const { vocabulary, offsets, slots, tfs } = snapshot;
    if (offsets.length !== vocabulary.length + 1 || offsets[0] !== 0 || offsets[vocabulary.length] !== slots.length || tfs.length !== slots.length) {
      throw new RangeError("keyword postings do not match their vocabulary");
    }
    if (docLengths.length !== live.length) throw new RangeError("document lengths do not match the live slots");
    const index = new KeywordIndex();
    index.ensureSlot(Math.max(slotCount - 1, 0));
    for (let i = 0; i < live.length; i++) {
      const slot = live[i]!;
      if (slot < 0 || slot >= slotCount) throw new RangeError(`live slot ${slot} out of range`);
      index.alive[slot] = 1;
      index.docLength[slot] = docLengths[i]!;
      index.totalLength += docLengths[i]!;
    }
    index.liveDocs = live.length;
    index.ensureTerms(vocabulary.length);
    for (let id = 0; id < vocabulary.length; id++) {
      const term = vocabulary[id]!;
      if (index.termIds.has(term)) throw new RangeError(`term ${term} appears twice`);
      index.termIds.set(term, id);
      index.terms.push(term);
      const start = offsets[id]!;
      const end = offsets[id + 1]!;
      if (end < start) throw new RangeError("keyword posting offsets go backwards");
      for (let i = start; i < end; i++) {
        const slot = slots[i]!;
        if (!(slot >= 0 && slot < slotCount) || !index.alive[slot]) throw new RangeError(`posting of a slot that is not live (${slot})`);
      }
      index.baseStart[id] = start;
      index.baseLength[id] = end - start;
      index.df[id] = end - start;
    }
    index.baseSlots = slots;
    index.baseTfs = tfs;
    index.totalPostings = slots.length;
    return index;
  }

  private score(
    slots: Int32Array<ArrayBufferLike>,
    tfs: Uint16Array<ArrayBufferLike>,
    start: number,
    end: number,
    idf: number,
    avgLength: number,
    touched: number[],
    accept: ((slot: number) => boolean) | undefined,
  ) {
    const acc = this.accumulator;
    const alive = this.alive;
    const docLength = this.docLength;
    for (let i = start; i < end; i++) {
      const slot = slots[i]!;
      if (!alive[slot]) continue;
      if (accept && !accept(slot)) continue;
      if (acc[slot] === 0) touched.push(slot);
      acc[slot]! += bm25Term(tfs[i]!, idf, docLength[slot]!, avgLength);
    }
  }

  /**
   * The k best slots for the query terms by BM25 (k1 1.2, b 0.75, Lucene's idf), optionally restricted to
   * slots `accept` allows.
   */
  search(queryTerms: string[], k: number, accept?: (slot: number) => boolean): KeywordMatches {
    const n = this.liveDocs;
    if (!n || k < 1) return { slots: [], scores: [], total: 0 };
    const avgLength = this.totalLength / n;
    const touched: number[] = [];
    for (const term of new Set(queryTerms)) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const df = this.df[id]!;
      if (df <= 0) continue;
      const idf = bm25Idf(n, df);
      const start = this.baseStart[id]!;
      this.score(this.baseSlots, this.baseTfs, start, start + this.baseLength[id]!, idf, avgLength, touched, accept);
      const extra = this.extra[id];
      if (extra) this.score(extra.slots, extra.tfs, 0, extra.length, idf, avgLength, touched, accept);
    }
    const acc = this.accumulator;
    const top = new TopK(k);
    for (const slot of touched) {
      top.offer(acc[slot]!, slot);
      acc[slot] = 0;
    }
    return { ...top.drain(), total: touched.length };
  }
}
