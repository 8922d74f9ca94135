/** BM25 term-frequency saturation (Lucene's and Typesense-independent default). */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;
/** A title term counts this many times a body term, so a page about X ranks above a page mentioning X. */
export const TITLE_WEIGHT = 2;
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

/**
 * An in-memory BM25 inverted index over integer slots, with postings in typed arrays. Queries are scored
 * term-at-a-time into a reused accumulator, with stop words already gone from both sides, so a query
 * touches only the postings of its few content terms; a bounded heap keeps the top k.
 */
export class KeywordIndex {
  private readonly termIds = new Map<string, number>();
  private readonly postings: Postings[] = [];
  /** Live document frequency per term. */
  private df = new Int32Array(1024);
  private docLength = new Float32Array(1024);
  private docTerms: (Int32Array | undefined)[] = [];
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

  /** Rough bytes held by postings, lengths and the vocabulary. */
  get sizeBytes(): number {
    return this.totalPostings * 6 + this.docLength.length * 9 + this.termIds.size * 48;
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

  private termId(term: string): number {
    let id = this.termIds.get(term);
    if (id === undefined) {
      id = this.postings.length;
      this.termIds.set(term, id);
      this.postings.push(new Postings());
      if (id >= this.df.length) {
        const df = new Int32Array(this.df.length * 2);
        df.set(this.df);
        this.df = df;
      }
    }
    return id;
  }

  /** Indexes a slot from its (already tokenised) title and body terms; a slot is added once. */
  add(slot: number, titleTerms: string[], bodyTerms: string[]) {
    this.ensureSlot(slot);
    if (this.alive[slot]) this.remove(slot);
    const counts = new Map<string, number>();
    for (const t of titleTerms) counts.set(t, (counts.get(t) ?? 0) + TITLE_WEIGHT);
    for (const t of bodyTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    const ids = new Int32Array(counts.size);
    let i = 0;
    let length = 0;
    for (const [term, tf] of counts) {
      const id = this.termId(term);
      this.postings[id]!.push(slot, tf);
      this.df[id]!++;
      ids[i++] = id;
      length += tf;
    }
    this.docTerms[slot] = ids;
    this.docLength[slot] = length;
    this.alive[slot] = 1;
    this.liveDocs++;
    this.totalLength += length;
    this.totalPostings += ids.length;
  }

  /** Removes a slot from ranking at once; its postings are reclaimed by a later compaction. */
  remove(slot: number) {
    if (!this.alive[slot]) return;
    const ids = this.docTerms[slot]!;
    for (const id of ids) this.df[id]!--;
    this.alive[slot] = 0;
    this.docTerms[slot] = undefined;
    this.liveDocs--;
    this.totalLength -= this.docLength[slot]!;
    this.deadPostings += ids.length;
    if (this.deadPostings > COMPACT_RATIO * this.totalPostings && this.deadPostings > 10_000) this.compact();
  }

  /** Drops postings of removed slots. */
  compact() {
    for (const p of this.postings) {
      let w = 0;
      for (let r = 0; r < p.length; r++) {
        if (this.alive[p.slots[r]!]) {
          p.slots[w] = p.slots[r]!;
          p.tfs[w] = p.tfs[r]!;
          w++;
        }
      }
      p.length = w;
    }
    this.totalPostings -= this.deadPostings;
    this.deadPostings = 0;
  }

  /**
   * The k best slots for the query terms by BM25 (k1 1.2, b 0.75, Lucene's idf), optionally restricted to
   * slots `accept` allows.
   */
  search(queryTerms: string[], k: number, accept?: (slot: number) => boolean): KeywordMatches {
    const n = this.liveDocs;
    if (!n || k < 1) return { slots: [], scores: [], total: 0 };
    const avgLength = this.totalLength / n;
    const acc = this.accumulator;
    const touched: number[] = [];
    for (const term of new Set(queryTerms)) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const df = this.df[id]!;
      if (df <= 0) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const p = this.postings[id]!;
      const { slots, tfs } = p;
      for (let i = 0; i < p.length; i++) {
        const slot = slots[i]!;
        if (!this.alive[slot]) continue;
        if (accept && !accept(slot)) continue;
        const tf = tfs[i]!;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * this.docLength[slot]!) / avgLength);
        if (acc[slot] === 0) touched.push(slot);
        acc[slot]! += (idf * tf * (BM25_K1 + 1)) / (tf + norm);
      }
    }
    const top = new TopK(k);
    for (const slot of touched) {
      top.offer(acc[slot]!, slot);
      acc[slot] = 0;
    }
    return { ...top.drain(), total: touched.length };
  }
}
