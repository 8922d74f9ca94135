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

  it("sizes the lists by the scope's matches and weighs terms by the account's idf", () => {
    const chunks = 10_000;
    const df = new Map([["alpha", 3000], ["beta", 3000], ["gamma", 50]]);
    // Over the account neither common term fits its share; a filter leaving 60 and 5 of their matches makes
    // beta fit, and alpha takes what beta leaves (all 60 of its matches); gamma has none in scope.
    const account = candidateShares(df, chunks, 100);
    expect(account.get("alpha")).toBeLessThan(60);
    const scoped = candidateShares(df, chunks, 100, new Map([["alpha", 60], ["beta", 5], ["gamma", 0]]));
    expect(scoped.has("gamma")).toBe(false);
    expect(scoped.get("beta")).toBeGreaterThanOrEqual(5);
    expect(scoped.get("alpha")).toBeGreaterThanOrEqual(60);
    // Weighed by the account's idf: with equal scope counts the rarer term in the account gets the larger share.
    const even = candidateShares(new Map([["common", 5000], ["rarer", 500]]), chunks, 100, new Map([["common", 400], ["rarer", 400]]));
    expect(even.get("rarer")!).toBeGreaterThan(even.get("common")!);
  });
});
