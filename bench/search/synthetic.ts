/**
 * A reproducible synthetic corpus for the 100k-chunk benchmark: topics with their own Zipf-distributed
 * vocabularies (so keyword postings have realistic skew) and 512-d vectors clustered around topic centroids
 * (so the vector graph faces a clustered, not uniform, space). Same seed, same corpus.
 */
export function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = "ka lo mi ne ru sa te vi zo pa qu de fi go hu ja ke li mo nu ra se ti vo xa ye zu ba ce".split(" ");

export interface SyntheticCorpus {
  chunk(i: number): { title: string; content: string; vector: Float32Array; topic: number };
  query(i: number): { text: string; vector: Float32Array; topic: number };
}

export function syntheticCorpus(opts: { seed?: number; topics?: number; vocabulary?: number; dimensions?: number } = {}): SyntheticCorpus {
  const { seed = 42, topics = 500, vocabulary = 30_000, dimensions = 512 } = opts;
  const rand = rng(seed);
  const words: string[] = [];
  for (let i = 0; i < vocabulary; i++) {
    const n = 2 + Math.floor(rand() * 3);
    let w = "";
    for (let j = 0; j < n; j++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    words.push(`${w}${i.toString(36)}`);
  }
  // Zipf sampling by inverse CDF over ranks.
  const cdf = new Float64Array(vocabulary);
  let sum = 0;
  for (let r = 0; r < vocabulary; r++) cdf[r] = sum += 1 / (r + 1);
  const zipf = (u: number) => {
    const x = u * sum;
    let lo = 0;
    let hi = vocabulary - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Each topic permutes the vocabulary by an offset, so its frequent words are its own.
  const offsets = Array.from({ length: topics }, () => Math.floor(rand() * vocabulary));
  const centroids = Array.from({ length: topics }, () => {
    const v = new Float32Array(dimensions);
    for (let i = 0; i < dimensions; i++) v[i] = rand() * 2 - 1;
    return v;
  });
  const word = (topic: number, r: () => number) => {
    // 70% topic vocabulary, 30% general vocabulary.
    const rank = zipf(r());
    return words[(r() < 0.7 ? rank + offsets[topic]! : rank) % vocabulary]!;
  };
  const vectorNear = (topic: number, r: () => number, noise: number) => {
    const v = new Float32Array(dimensions);
    const c = centroids[topic]!;
    for (let i = 0; i < dimensions; i++) v[i] = c[i]! + noise * (r() * 2 - 1);
    return v;
  };
  return {
    chunk(i) {
      const r = rng(seed * 1_000_003 + i);
      const topic = Math.floor(r() * topics);
      const parts: string[] = [];
      let length = 0;
      while (length < 1000) {
        const w = word(topic, r);
        parts.push(w);
        length += w.length + 1;
      }
      return { title: `${word(topic, r)} ${word(topic, r)}`, content: parts.join(" ").slice(0, 1000), vector: vectorNear(topic, r, 1.5), topic };
    },
    query(i) {
      const r = rng(seed * 7_000_003 + i);
      const topic = Math.floor(r() * topics);
      // Three mid-frequency topic words (ranks 20..500), like a user's content words.
      const terms = Array.from({ length: 3 }, () => words[(20 + Math.floor(r() * 480) + offsets[topic]!) % vocabulary]!);
      return { text: terms.join(" "), vector: vectorNear(topic, r, 1.5), topic };
    },
  };
}
