import { bm25Idf } from "../../../lib/search/bm25";
import { candidateShares, MIN_CANDIDATES_PER_TERM } from "../../../lib/search/typesense/keyword";

describe("candidateShares (keyword candidates per query term on Typesense)", () => {
  it("asks every term for all its matches when they fit in the budget, and none of a term without a match", () => {
    const shares = candidateShares(new Map([["rare", 3], ["common", 40], ["absent", 0]]), 1000, 200);
    expect(shares.has("absent")).toBe(false);
    expect(shares.get("rare")).toBeGreaterThanOrEqual(Math.max(3, MIN_CANDIDATES_PER_TERM));
    expect(shares.get("common")).toBeGreaterThanOrEqual(40);
  });

  it("shares the budget by idf once matches exceed it, what fitting terms leave going to the others", () => {
    const chunks = 10_000;
    const df = new Map([["rare", 5], ["mid", 300], ["common", 4000]]);
    const shares = candidateShares(df, chunks, 200);
    // "rare" takes its 5 matches; 195 are left for the other two, split by idf.
    const [mid, common] = [bm25Idf(chunks, 300), bm25Idf(chunks, 4000)];
    expect(shares.get("mid")).toBe(Math.floor((195 * mid) / (mid + common)));
    expect(shares.get("common")).toBe(Math.max(MIN_CANDIDATES_PER_TERM, Math.floor((195 * common) / (mid + common))));
    expect(shares.get("mid")!).toBeGreaterThan(shares.get("common")!);
  });

  it("gives every matching term at least the floor and none more than Typesense's per_page ceiling", () => {
    const many = new Map(Array.from({ length: 30 }, (_, i) => [`t${i}`, 5000 + i] as [string, number]));
    for (const share of candidateShares(many, 10_000, 100).values()) expect(share).toBe(MIN_CANDIDATES_PER_TERM);
    expect(candidateShares(new Map([["only", 9000]]), 10_000, 600).get("only")).toBe(250);
  });
});
