import { KeywordIndex } from "../../../lib/search/bm25";
import { fuseLists, normalizedScore } from "../../../lib/search/fusion";
import { terms } from "../../../lib/search/tokenizer";
import { VectorIndex, bufferToVector, normalize, vectorToBuffer } from "../../../lib/search/vectors";

describe("fuseLists (confidence-weighted score fusion)", () => {
  // Keyword: "a" stands far above a flat tail; vectors: a flat list. Keyword is the surer list.
  const keyword = [{ id: "a", score: 20 }, { id: "b", score: 5 }, { id: "c", score: 5 }, { id: "d", score: 5 }, { id: "e", score: 4 }];
  const vector = [{ id: "e", distance: 0.4 }, { id: "d", distance: 0.41 }, { id: "c", distance: 0.42 }, { id: "a", distance: 0.43 }, { id: "f", distance: 0.44 }];

  it("scales each list to 0..1 and weighs it by prior × (how far its best stands above the list)²", () => {
    const conf = (xs: number[]) => {
      const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
      const sd = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length);
      return (Math.max(...xs) - mean) / sd;
    };
    const cK = conf(keyword.map((h) => h.score));
    const cV = conf(vector.map((h) => 1 - h.distance));
    const wK = (0.5 * cK ** 2) / (0.5 * cK ** 2 + 0.5 * cV ** 2);
    const fused = Object.fromEntries(fuseLists(keyword, vector, 0.5).map((f) => [f.id, f]));
    expect(fused.a!.score).toBeCloseTo(wK * 1 + (1 - wK) * ((0.57 - 0.56) / (0.6 - 0.56)), 6);
    expect(fused.e!.score).toBeCloseTo(wK * 0 + (1 - wK) * 1, 6);
    expect(fused.f!.score).toBeCloseTo(0, 6);
    expect(fused.a).toMatchObject({ keywordRank: 1, vectorRank: 4, textScore: 20, distance: 0.43 });
  });

  it("follows the surer list whichever side it is, and the prior when neither can say", () => {
    expect(fuseLists(keyword, vector, 0.5)[0]!.id).toBe("a");
    // Swap the roles: a clear vector winner and a flat keyword list.
    const flatKeyword = keyword.map((h, i) => ({ id: h.id, score: i === 0 ? 5 : h.score }));
    const clearVector = vector.map((h, i) => ({ id: h.id, distance: i === 0 ? 0.1 : h.distance }));
    expect(fuseLists(flatKeyword, clearVector, 0.5)[0]!.id).toBe("e");
    // One hit per list: no spread to measure, so alpha alone decides.
    expect(fuseLists([{ id: "x", score: 1 }], [{ id: "y", distance: 0 }], 1).map((f) => f.id)).toEqual(["y", "x"]);
    expect(fuseLists([{ id: "x", score: 1 }], [{ id: "y", distance: 0 }], 0).map((f) => f.id)).toEqual(["x", "y"]);
  });

  it("alpha 0 keeps the keyword order (then vector-only hits), alpha 1 the vector order", () => {
    expect(fuseLists(keyword, vector, 0).slice(0, 5).map((f) => f.id)).toEqual(["a", "b", "c", "d", "e"]);
    expect(fuseLists(keyword, vector, 1).map((f) => f.id)).toEqual(["e", "d", "c", "a", "b", "f"]);
  });
});

describe("normalizedScore", () => {
  it("maps the best score to 100 and others proportionally, 0 for nothing", () => {
    expect(normalizedScore(4, 4)).toBe(100);
    expect(normalizedScore(1, 4)).toBe(25);
    expect(normalizedScore(0, 4)).toBe(0);
    expect(normalizedScore(1, 0)).toBe(0);
  });
});

describe("KeywordIndex (BM25)", () => {
  const index = new KeywordIndex();
  const docs = ["the cat sat on the mat", "dogs chase cats", "a bird sang", "cat cat cat food"];
  docs.forEach((d, i) => index.add(i, [], terms(d)));

  it("ranks by BM25: more occurrences of a rarer term rank higher; unmatched slots are absent", () => {
    const res = index.search(terms("cat"), 10);
    expect(res.slots).toEqual([3, 0, 1]);
    expect(res.total).toBe(3);
    expect(res.scores[0]).toBeGreaterThan(res.scores[1]!);
  });

  it("computes Lucene BM25 exactly for a single-term query", () => {
    const n = 4;
    const df = 3;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    const lengths = docs.map((d) => terms(d).length);
    const avg = lengths.reduce((a, b) => a + b) / n;
    const tf = 3;
    const expected = (idf * tf * 2.2) / (tf + 1.2 * (1 - 0.75 + (0.75 * lengths[3]!) / avg));
    expect(index.search(terms("cat"), 1).scores[0]).toBeCloseTo(expected, 10);
  });

  it("keeps the top k, filters by slot and forgets removed slots", () => {
    expect(index.search(terms("cat"), 1).slots).toEqual([3]);
    expect(index.search(terms("cat"), 10, (s) => s !== 3).slots).toEqual([0, 1]);
    index.remove(3, [], terms(docs[3]!));
    expect(index.search(terms("cat"), 10).slots).toEqual([0, 1]);
    expect(index.size).toBe(3);
  });

  it("weights title terms above body terms", () => {
    const t = new KeywordIndex();
    t.add(0, [], terms("billing refunds explained"));
    t.add(1, terms("refunds"), terms("billing explained"));
    expect(t.search(terms("refunds"), 2).slots[0]).toBe(1);
  });
});

describe("VectorIndex", () => {
  const unit = (angle: number) => new Float32Array([Math.cos(angle), Math.sin(angle)]);

  it("returns cosine distances ascending, within maxDistance, with an exact scan or the HNSW graph alike", () => {
    for (const flatCutoff of [1000, 0]) {
      const v = new VectorIndex(2, { flatCutoff });
      for (let i = 0; i < 50; i++) v.set(i, unit((i * Math.PI) / 50));
      expect(v.usesGraph).toBe(flatCutoff === 0);
      const res = v.search(unit(0), 3);
      expect(res.slots).toEqual([0, 1, 2]);
      expect(res.distances[0]).toBeCloseTo(0, 5);
      expect(res.distances[1]).toBeCloseTo(1 - Math.cos(Math.PI / 50), 5);
      const near = v.search(unit(0), 50, 0.01);
      expect(near.slots.length).toBeGreaterThan(0);
      expect(near.distances.every((d) => d <= 0.01)).toBe(true);
      v.remove(0);
      expect(v.search(unit(0), 1).slots).toEqual([1]);
      expect(v.search(unit(0), 2, 2, (s) => s > 10).slots.every((s) => s > 10)).toBe(true);
    }
  });

  it("scans int8 copies once the graph exists: distances within int8 rounding of Float32, in order, over more than one batch", () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    // 13 dimensions is not a multiple of the kernel's 8; 1,500 vectors are more than one batch of 1,024.
    for (const dimensions of [13, 512]) {
      const v = new VectorIndex(dimensions, { flatCutoff: 10 });
      const vectors = Array.from({ length: 1500 }, () => normalize(Float32Array.from({ length: dimensions }, rand)));
      vectors.forEach((x, slot) => v.set(slot, x));
      expect(v.usesGraph).toBe(true);
      const query = Float32Array.from({ length: dimensions }, rand);
      const unitQuery = normalize(query);
      const exact = vectors.map((x) => 1 - x.reduce((s, xi, i) => s + xi * unitQuery[i]!, 0));
      // Each int8 component is off by at most half its step (max |x| / 127); the int16 query adds far less.
      const queryL1 = unitQuery.reduce((s, qi) => s + Math.abs(qi), 0);
      const bound = (slot: number) => (queryL1 * Math.max(...vectors[slot]!.map(Math.abs))) / 254 + 1e-4;
      const all = v.exact(query, 1500);
      expect(all.slots).toHaveLength(1500);
      all.slots.forEach((slot, i) => expect(Math.abs(all.distances[i]! - exact[slot]!)).toBeLessThan(bound(slot)));
      for (let i = 1; i < 1500; i++) expect(all.distances[i]!).toBeGreaterThanOrEqual(all.distances[i - 1]!);
      // A filter listing few slots is scanned, not searched in the graph.
      const odd = Array.from({ length: 8 }, (_, i) => 2 * i + 1);
      const listed = v.search(query, 3, 2, (s) => s % 2 === 1 && s < 16, () => odd);
      const best = [...odd].sort((a, b) => exact[a]! - exact[b]!).slice(0, 3);
      expect(listed.slots).toEqual(best);
    }
  });

  it("stores vectors compactly as Float32 bytes and reads BSON Binary back", () => {
    const vec = normalize([3, 4]);
    const buf = vectorToBuffer(vec);
    expect(buf.length).toBe(8);
    expect(Array.from(bufferToVector(buf))).toEqual(Array.from(vec));
    expect(Array.from(bufferToVector({ buffer: new Uint8Array(buf) }))).toEqual(Array.from(vec));
  });
});
