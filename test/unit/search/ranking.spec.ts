import { KeywordIndex } from "../../../lib/search/bm25";
import { fuseRanks, normalizedScore } from "../../../lib/search/fusion";
import { terms } from "../../../lib/search/tokenizer";
import { VectorIndex, bufferToVector, normalize, vectorToBuffer } from "../../../lib/search/vectors";

describe("fuseRanks (Typesense's rank fusion)", () => {
  it("adds (1 - alpha)/dense keyword rank and alpha/vector rank", () => {
    const fused = fuseRanks(
      [{ id: "a", score: 9 }, { id: "b", score: 9 }, { id: "c", score: 5 }],
      [{ id: "c", distance: 0.1 }, { id: "d", distance: 0.2 }],
      0.3,
    );
    const byId = Object.fromEntries(fused.map((f) => [f.id, f]));
    // a and b tie on text score, so both have keyword rank 1; c has rank 2 (dense), not 3.
    expect(byId.a!.score).toBeCloseTo(0.7);
    expect(byId.b!.score).toBeCloseTo(0.7);
    expect(byId.c!.keywordRank).toBe(2);
    expect(byId.c!.score).toBeCloseTo(0.7 / 2 + 0.3 / 1);
    expect(byId.d!.score).toBeCloseTo(0.3 / 2);
    expect(fused.map((f) => f.id)).toEqual(["a", "b", "c", "d"]);
  });

  it("is 1 for a hit first in both lists and honours alpha 0 and 1", () => {
    expect(fuseRanks([{ id: "x", score: 1 }], [{ id: "x", distance: 0 }], 0.3)[0]!.score).toBeCloseTo(1);
    expect(fuseRanks([{ id: "x", score: 1 }], [{ id: "y", distance: 0 }], 1).map((f) => f.id)).toEqual(["y", "x"]);
    expect(fuseRanks([{ id: "x", score: 1 }], [{ id: "y", distance: 0 }], 0).map((f) => f.id)).toEqual(["x", "y"]);
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

  it("stores vectors compactly as Float32 bytes and reads BSON Binary back", () => {
    const vec = normalize([3, 4]);
    const buf = vectorToBuffer(vec);
    expect(buf.length).toBe(8);
    expect(Array.from(bufferToVector(buf))).toEqual(Array.from(vec));
    expect(Array.from(bufferToVector({ buffer: new Uint8Array(buf) }))).toEqual(Array.from(vec));
  });
});
