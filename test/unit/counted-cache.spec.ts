import { CountedCache } from "../../lib/counted-cache";

describe("a cache of reads kept under an account's change count", () => {
  const limits = { accounts: 2, entriesPerAccount: 2, ttlMs: 1_000 };

  it("answers only under the count the read was made under, per account and key", () => {
    const cache = new CountedCache<string>(limits);
    cache.set(1, 5, "page", "read at 5", 0);
    expect(cache.get(1, 5, "page", 10)).toBe("read at 5");
    expect(cache.get(1, 6, "page", 10)).toBeUndefined();
    expect(cache.get(1, 5, "other", 10)).toBeUndefined();
    expect(cache.get(2, 5, "page", 10)).toBeUndefined();
  });

  it("drops what was kept under an older count, and never keeps a read older than what it holds", () => {
    const cache = new CountedCache<string>(limits);
    cache.set(1, 5, "a", "a at 5", 0);
    cache.set(1, 6, "b", "b at 6", 0);
    expect(cache.get(1, 6, "a", 0)).toBeUndefined();
    cache.set(1, 5, "a", "a at 5, late", 0);
    expect(cache.get(1, 5, "a", 0)).toBeUndefined();
    expect(cache.get(1, 6, "b", 0)).toBe("b at 6");
  });

  it("forgets entries past their time, and the oldest accounts and entries past its bounds", () => {
    const cache = new CountedCache<string>(limits);
    cache.set(1, 1, "a", "1a", 0);
    expect(cache.get(1, 1, "a", 999)).toBe("1a");
    expect(cache.get(1, 1, "a", 1_000)).toBeUndefined();
    cache.set(1, 1, "a", "1a", 0);
    cache.set(1, 1, "b", "1b", 0);
    cache.set(1, 1, "c", "1c", 0);
    expect([cache.get(1, 1, "a", 0), cache.get(1, 1, "b", 0), cache.get(1, 1, "c", 0)]).toEqual([undefined, "1b", "1c"]);
    cache.set(2, 1, "a", "2a", 0);
    cache.set(3, 1, "a", "3a", 0);
    expect([cache.get(1, 1, "b", 0), cache.get(2, 1, "a", 0), cache.get(3, 1, "a", 0)]).toEqual([undefined, "2a", "3a"]);
  });

  it("replaces a kept key's value without pushing out another entry", () => {
    const cache = new CountedCache<string>(limits);
    cache.set(1, 1, "a", "1a", 0);
    cache.set(1, 1, "b", "1b", 0);
    cache.set(1, 1, "b", "1b again", 0);
    expect([cache.get(1, 1, "a", 0), cache.get(1, 1, "b", 0)]).toEqual(["1a", "1b again"]);
  });
});
