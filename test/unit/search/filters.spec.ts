import {
  compileFilter,
  filterProblems,
  matches,
  MAX_FILTER_CLAUSES,
  MAX_FILTER_DEPTH,
  type FilterableChunk,
  type SearchFilter,
} from "../../../lib/search/filters";

const DAY = 86_400_000;
const chunk = (over: Partial<FilterableChunk> = {}): FilterableChunk => ({
  sourceId: 7,
  documentId: "doc-a",
  indexedAt: Date.parse("2026-11-01T00:00:00Z"),
  metadata: {
    source: "website",
    title: "Pricing",
    last_modified: "Tue, 03 Nov 2026 10:00:00 GMT",
    lastmod: "2026-10-15",
    pages: 12,
    draft: false,
    tags: ["billing", "faq"],
    empty: null,
  },
  ...over,
});

describe("metadata filters: validation", () => {
  it("accepts comparisons on the built-in keys and metadata keys, and nested and/or", () => {
    const ok: SearchFilter[] = [
      { type: "eq", key: "source_id", value: 7 },
      { type: "in", key: "source_id", value: [1, 2] },
      { type: "ne", key: "document_id", value: "x" },
      { type: "gte", key: "indexed_at", value: "2026-11-01" },
      { type: "lt", key: "indexed_at", value: 1_800_000_000_000 },
      { type: "eq", key: "metadata.draft", value: true },
      { type: "gt", key: "metadata.pages", value: 3 },
      { type: "lte", key: "metadata.last_modified", value: "2026-11-05T00:00:00Z" },
      { type: "and", filters: [{ type: "or", filters: [{ type: "eq", key: "metadata.source", value: "website" }] }, { type: "nin", key: "metadata.tags", value: ["x"] }] },
    ];
    for (const f of ok) expect(filterProblems(f)).toEqual([]);
  });

  it("refuses unknown operators, unknown keys and bare metadata names, naming where", () => {
    expect(filterProblems({ type: "like", key: "source_id", value: 1 })).toEqual([
      expect.objectContaining({ field: "filters.type", type: "enumValue" }),
    ]);
    expect(filterProblems({ type: "eq", key: "title", value: "x" })[0]).toMatchObject({ field: "filters.key", message: expect.stringContaining("unknown filter key 'title'") });
    expect(filterProblems({ type: "eq", key: "metadata.a b", value: "x" })[0]).toMatchObject({ field: "filters.key" });
    expect(filterProblems({ type: "and", filters: [{ type: "eq", key: "source_id", value: 1 }, { type: "eq", key: "nope", value: 1 }] })[0]).toMatchObject({
      field: "filters.filters[1].key",
    });
    expect(filterProblems({ type: "eq", key: "source_id", value: 1, extra: 1 })[0]).toMatchObject({ field: "filters.extra", type: "objectStrict" });
  });

  it("checks value types per operator and key", () => {
    const bad: unknown[] = [
      { type: "eq", key: "source_id", value: "7" },
      { type: "eq", key: "source_id", value: 1.5 },
      { type: "eq", key: "document_id", value: 3 },
      { type: "gt", key: "document_id", value: "a" },
      { type: "gt", key: "metadata.title", value: "abc" },
      { type: "gt", key: "metadata.pages", value: true },
      { type: "eq", key: "indexed_at", value: "yesterday" },
      { type: "eq", key: "metadata.x", value: ["a"] },
      { type: "eq", key: "metadata.x", value: { a: 1 } },
      { type: "eq", key: "metadata.x", value: null },
      { type: "eq", key: "metadata.x" },
      { type: "in", key: "metadata.x", value: [] },
      { type: "in", key: "metadata.x", value: "a" },
      { type: "in", key: "source_id", value: [1, "2"] },
      { type: "eq", key: "metadata.x", value: "x".repeat(257) },
      { type: "eq", key: "metadata.x", value: "a`b" },
      { type: "and", filters: [] },
      { type: "or" },
      "eq",
      null,
    ];
    for (const f of bad) expect(filterProblems(f).length).toBeGreaterThan(0);
  });

  it("bounds depth and clause count", () => {
    let deep: SearchFilter = { type: "eq", key: "source_id", value: 1 };
    for (let i = 1; i < MAX_FILTER_DEPTH; i++) deep = { type: "and", filters: [deep] };
    expect(filterProblems(deep)).toEqual([]);
    expect(filterProblems({ type: "or", filters: [deep] })[0]).toMatchObject({ type: "filterDepth" });
    const clause = { type: "eq", key: "source_id", value: 1 } as const;
    expect(filterProblems({ type: "and", filters: Array(MAX_FILTER_CLAUSES).fill(clause) })).toEqual([]);
    expect(filterProblems({ type: "and", filters: Array(MAX_FILTER_CLAUSES + 1).fill(clause) })).toEqual([
      expect.objectContaining({ field: "filters", type: "filterClauses" }),
    ]);
  });
});

describe("metadata filters: evaluation", () => {
  const c = chunk();
  const yes = (f: SearchFilter, x = c) => expect(matches(f, x)).toBe(true);
  const no = (f: SearchFilter, x = c) => expect(matches(f, x)).toBe(false);

  it("compares built-in keys", () => {
    yes({ type: "eq", key: "source_id", value: 7 });
    no({ type: "ne", key: "source_id", value: 7 });
    yes({ type: "in", key: "source_id", value: [3, 7] });
    no({ type: "nin", key: "source_id", value: [3, 7] });
    yes({ type: "eq", key: "document_id", value: "doc-a" });
    yes({ type: "gte", key: "indexed_at", value: "2026-11-01T00:00:00Z" });
    no({ type: "gt", key: "indexed_at", value: "2026-11-01T00:00:00Z" });
    yes({ type: "lt", key: "indexed_at", value: c.indexedAt + DAY });
    yes({ type: "eq", key: "indexed_at", value: "2026-11-01T00:00:00Z" });
  });

  it("compares metadata by type: strings exactly, numbers and dates by order, arrays by any element", () => {
    yes({ type: "eq", key: "metadata.source", value: "website" });
    no({ type: "eq", key: "metadata.source", value: "Website" });
    no({ type: "eq", key: "metadata.pages", value: "12" });
    yes({ type: "ne", key: "metadata.pages", value: "12" });
    yes({ type: "ne", key: "metadata.nested", value: "x" }, chunk({ metadata: { nested: { a: 1 } } }));
    no({ type: "eq", key: "metadata.nested", value: "x" }, chunk({ metadata: { nested: { a: 1 } } }));
    yes({ type: "eq", key: "metadata.pages", value: 12 });
    yes({ type: "eq", key: "metadata.draft", value: false });
    yes({ type: "gt", key: "metadata.pages", value: 11 });
    no({ type: "gt", key: "metadata.pages", value: 12 });
    yes({ type: "lte", key: "metadata.pages", value: 12 });
    yes({ type: "gt", key: "metadata.last_modified", value: "2026-11-03" });
    no({ type: "gt", key: "metadata.last_modified", value: "2026-11-04" });
    yes({ type: "lt", key: "metadata.lastmod", value: "2026-10-16T00:00:00Z" });
    no({ type: "gt", key: "metadata.title", value: "2000-01-01" });
    no({ type: "gt", key: "metadata.pages", value: "2000-01-01" });
    yes({ type: "eq", key: "metadata.tags", value: "faq" });
    no({ type: "ne", key: "metadata.tags", value: "faq" });
    yes({ type: "nin", key: "metadata.tags", value: ["x", "y"] });
    no({ type: "nin", key: "metadata.tags", value: ["x", "billing"] });
  });

  it("is false on a missing key for every operator, ne and nin included", () => {
    // Object.prototype's members are not metadata a document has.
    for (const key of ["metadata.missing", "metadata.empty", "metadata.constructor", "metadata.toString", "metadata.__proto__"]) {
      no({ type: "eq", key, value: "x" });
      no({ type: "ne", key, value: "x" });
      no({ type: "in", key, value: ["x"] });
      no({ type: "nin", key, value: ["x"] });
      no({ type: "gt", key, value: 0 });
    }
    no({ type: "ne", key: "metadata.source", value: "x" }, chunk({ metadata: null }));
  });

  it("combines with and / or", () => {
    const f: SearchFilter = {
      type: "or",
      filters: [
        { type: "and", filters: [{ type: "eq", key: "source_id", value: 7 }, { type: "eq", key: "metadata.draft", value: true }] },
        { type: "in", key: "document_id", value: ["doc-a"] },
      ],
    };
    yes(f);
    no(f, chunk({ documentId: "doc-b" }));
    yes(f, chunk({ documentId: "doc-b", metadata: { draft: true } }));
  });

  it("a compiled predicate agrees with matches over random chunks and filters", () => {
    let seed = 42;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const pick = <T>(xs: T[]) => xs[rnd(xs.length)]!;
    const leaf = (): SearchFilter =>
      pick<() => SearchFilter>([
        () => ({ type: pick(["eq", "ne"] as const), key: "metadata.lang", value: pick(["en", "de", "fr"]) }),
        () => ({ type: pick(["in", "nin"] as const), key: "source_id", value: [1 + rnd(3), 1 + rnd(3)] }),
        () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: "metadata.n", value: rnd(10) }),
      ])();
    const chunks = Array.from({ length: 50 }, (_, i) => chunk({ sourceId: 1 + rnd(3), documentId: `d${i}`, metadata: rnd(4) ? { lang: pick(["en", "de", "fr"]), n: rnd(10) } : {} }));
    for (let t = 0; t < 200; t++) {
      const f: SearchFilter = { type: pick(["and", "or"] as const), filters: [leaf(), leaf()] };
      expect(filterProblems(f)).toEqual([]);
      const p = compileFilter(f);
      const [a, b] = (f as { filters: SearchFilter[] }).filters.map(compileFilter);
      for (const x of chunks) expect(p(x)).toBe(f.type === "and" ? a!(x) && b!(x) : a!(x) || b!(x));
    }
  });
});
