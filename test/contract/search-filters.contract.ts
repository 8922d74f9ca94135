import { compileFilter, filterProblems, type FilterableChunk, type SearchFilter } from "../../lib/search/filters";
import { fuseLists } from "../../lib/search/fusion";
import { MAX_DEPTH, type ChunkHit, type IndexedChunk, type IndexQuery, type SearchIndex, type SearchMode } from "../../lib/search/port";
import { HYBRID_VECTOR_HITS } from "../../lib/search/typesense/engine";
import { keywordExact } from "./keyword-budget";
import { seeded } from "../harness/fixture-site";

/**
 * Metadata filters through the SearchIndex port (docs/adr/0058-metadata-filters.md), part of the engine contract:
 * hand-picked filters over a small corpus with the expected chunks spelled out, setDocumentMetadata, and the
 * property that a filtered search is the engine's own unfiltered ranking with the non-matching chunks taken out:
 * the filter applies before ranking, so a selective filter still gets the true top k.
 *
 * Vectors are seeded random points around a few centroids (the ranking, not the model, is under test here).
 */
export interface FilterContractContext {
  index(): SearchIndex;
  /** Three accounts of their own: hand-picked filters, the property corpus, metadata changes. */
  accounts: { picked: number; property: number; changed: number };
  dimensions: number;
  alpha: number;
}

const DAY = 86_400_000;
const BASE = Date.parse("2026-01-01T00:00:00Z");
const WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "glacier", "harbour", "island", "jetty", "kelp", "lagoon"];
/** Cosine distance cutoff of the property runs: some vectors of the corpus lie beyond it. */
const MAX_DISTANCE = 0.9;

/** Points scattered around `topics` random centroids: near ones share a topic, others are about orthogonal. */
function vectorSpace(dimensions: number, seed: number, topics = 4) {
  const { rnd } = seeded(seed);
  const uniform = () => rnd(2_000_001) / 1_000_000 - 1;
  const centroids = Array.from({ length: topics }, () => Float32Array.from({ length: dimensions }, uniform));
  return (topic: number) => Float32Array.from(centroids[topic % topics]!, (x) => x + 1.2 * uniform());
}

/** Ids and scores of a ranking, scores rounded so both sides of a comparison read alike. */
const ranking = (hits: { id: string; score: number }[]) => hits.map((h) => `${h.id} ${h.score.toFixed(5)}`);

export function searchFilterContract(ctx: FilterContractContext) {
  const { picked, property, changed } = ctx.accounts;
  const vectorNear = vectorSpace(ctx.dimensions, 11);
  const query = (accountId: number, mode: SearchMode, text: string, vector: Float32Array, extra: Partial<IndexQuery> = {}): IndexQuery => ({
    accountId, text, mode, vector: mode === "keyword" ? null : vector, depth: 100, alpha: ctx.alpha, maxDistance: 2, ...extra,
  });

  describe("metadata filters", () => {
    // Hand-picked: every chunk says "harbour"; each filter's chunks are written out.
    const meta: Record<string, Record<string, unknown> | null> = {
      a: { lang: "en", pages: 12, draft: false, tags: ["billing", "faq"], last_modified: "Tue, 03 Nov 2026 10:00:00 GMT" },
      b: { lang: "de", pages: 3, draft: true, tags: ["faq"], last_modified: "2026-10-15" },
      c: { lang: "en", pages: 40, tags: ["news"], last_modified: "Mon, 02 Nov 2026 08:00:00 GMT" },
      // Values of other types than the filters': never equal, never ordered.
      d: { lang: 7, pages: "12", draft: "false" },
      e: null,
    };
    const pickedChunks: [label: string, doc: string, sourceId: number, indexedAt: string][] = [
      ["a", "a", 11, "2026-01-10"],
      ["b0", "b", 11, "2026-02-10"],
      ["b1", "b", 11, "2026-03-10"],
      ["c", "c", 12, "2026-03-10"],
      ["d", "d", 12, "2026-04-10"],
      ["e", "e", 12, "2026-04-10"],
    ];
    const docId = (doc: string) => `${picked}-doc-${doc}`;
    const harbour = vectorNear(0);
    const labels = async (filter: SearchFilter, mode: SearchMode = "keyword") => {
      const res = await ctx.index().search(query(picked, mode, "harbour", harbour, { filter }));
      return res.hits.map((h) => h.id.slice(`${picked}-`.length)).sort();
    };

    // The property corpus: 40 documents of 1 to 3 chunks over 4 sources, random metadata (mixed types, arrays,
    // nulls, HTTP and ISO dates), random indexing days; chunk i has 6 + i words, so no two keyword scores tie.
    const { rnd, pick } = seeded(7);
    const LANGS = ["en", "de", "fr", "a b,c"] as const;
    const TAGS = ["x", "y", "z"] as const;
    const corpus: (IndexedChunk & FilterableChunk)[] = [];
    for (let d = 0; d < 40; d++) {
      let metadata: Record<string, unknown> | null = {};
      if (rnd(5)) metadata.lang = rnd(6) ? pick(LANGS) : 3;
      if (rnd(4)) metadata.n = rnd(10);
      if (rnd(3)) metadata.draft = rnd(2) === 0;
      if (rnd(3)) metadata.tags = [pick(TAGS), pick(TAGS)];
      if (rnd(3)) metadata.last_modified = rnd(2) ? new Date(BASE + rnd(20) * DAY).toUTCString() : new Date(BASE + rnd(20) * DAY).toISOString();
      if (!rnd(8)) metadata.lang = null;
      if (d === 0) metadata = { lang: { code: "en" }, tags: [] };
      if (d === 1) metadata = null;
      const sourceId = 1 + rnd(4);
      const topic = rnd(4);
      for (let position = 0, n = 1 + rnd(3); position < n; position++) {
        const i = corpus.length;
        corpus.push({
          id: `${property}-p${d}-${position}`, accountId: property, sourceId, documentId: `${property}-p${d}`, position,
          title: `Note ${d}`, url: `https://notes.example/${d}`,
          content: Array.from({ length: 6 + i }, () => WORDS[rnd(1 + rnd(WORDS.length))]!).join(" "),
          vector: rnd(6) ? vectorNear(topic) : null,
          indexedAt: BASE + rnd(20) * DAY,
          metadata,
        });
      }
    }
    const documents = [...new Set(corpus.map((c) => c.documentId))];
    const day = () => BASE + rnd(20) * DAY;
    const leaf = (): SearchFilter =>
      pick<() => SearchFilter>([
        () => ({ type: pick(["eq", "ne"] as const), key: "metadata.lang", value: pick([...LANGS, 3]) }),
        () => ({ type: pick(["in", "nin"] as const), key: "metadata.lang", value: [pick(LANGS), pick([...LANGS, 3])] }),
        () => ({ type: pick(["eq", "ne"] as const), key: "metadata.tags", value: pick(TAGS) }),
        () => ({ type: pick(["in", "nin"] as const), key: "metadata.tags", value: [pick(TAGS)] }),
        () => ({ type: pick(["eq", "ne"] as const), key: "metadata.draft", value: rnd(2) === 0 }),
        () => ({ type: pick(["eq", "ne", "gt", "gte", "lt", "lte"] as const), key: "metadata.n", value: rnd(10) }),
        () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: "metadata.last_modified", value: new Date(day()).toISOString() }),
        () => ({ type: pick(["eq", "ne"] as const), key: "source_id", value: 1 + rnd(4) }),
        () => ({ type: pick(["in", "nin"] as const), key: "source_id", value: [1 + rnd(4), 1 + rnd(4)] }),
        () => ({ type: pick(["eq", "ne"] as const), key: "document_id", value: pick(documents) }),
        () => ({ type: pick(["in", "nin"] as const), key: "document_id", value: [pick(documents), pick(documents), pick(documents)] }),
        () => ({ type: pick(["eq", "gt", "gte", "lt", "lte"] as const), key: "indexed_at", value: rnd(2) ? day() : new Date(day()).toISOString() }),
      ])();
    const randomFilter = (depth: number): SearchFilter =>
      depth === 0 || rnd(3) === 0 ? leaf() : { type: pick(["and", "or"] as const), filters: Array.from({ length: 1 + rnd(3) }, () => randomFilter(depth - 1)) };
    const QUERIES = [
      { text: "amber fjord", vector: vectorNear(0) },
      { text: "cobalt lagoon island", vector: vectorNear(2) },
    ];

    beforeAll(async () => {
      await ctx.index().upsertChunks(
        pickedChunks.map(([label, doc, sourceId, at], i) => ({
          id: `${picked}-${label}`, accountId: picked, sourceId, documentId: docId(doc), position: label.endsWith("1") ? 1 : 0,
          title: `Harbour ${label}`, url: `https://harbour.example/${doc}`,
          content: `The harbour notes ${"and more ".repeat(i)}`, vector: vectorNear(i), indexedAt: Date.parse(at), metadata: meta[doc]!,
        })),
      );
      expect(corpus.length).toBeLessThanOrEqual(MAX_DEPTH / 2);
      await ctx.index().upsertChunks(corpus);
    });

    const cases: [string, SearchFilter, string[]][] = [
      ["eq on a string", { type: "eq", key: "metadata.lang", value: "en" }, ["a", "c"]],
      ["ne: chunks without the key never match", { type: "ne", key: "metadata.lang", value: "en" }, ["b0", "b1", "d"]],
      ["in over mixed types", { type: "in", key: "metadata.lang", value: ["de", 7] }, ["b0", "b1", "d"]],
      ["nin", { type: "nin", key: "metadata.lang", value: ["en", "de"] }, ["d"]],
      ["eq on a number ('12' is a string, not 12)", { type: "eq", key: "metadata.pages", value: 12 }, ["a"]],
      ["ne on a number (a string is never equal)", { type: "ne", key: "metadata.pages", value: 12 }, ["b0", "b1", "c", "d"]],
      ["gt", { type: "gt", key: "metadata.pages", value: 3 }, ["a", "c"]],
      ["gte", { type: "gte", key: "metadata.pages", value: 3 }, ["a", "b0", "b1", "c"]],
      ["lt", { type: "lt", key: "metadata.pages", value: 12 }, ["b0", "b1"]],
      ["lte (strings are never ordered)", { type: "lte", key: "metadata.pages", value: 12 }, ["a", "b0", "b1"]],
      ["eq on a boolean ('false' is a string)", { type: "eq", key: "metadata.draft", value: false }, ["a"]],
      ["ne on a boolean", { type: "ne", key: "metadata.draft", value: false }, ["b0", "b1", "d"]],
      ["eq on an array: any element", { type: "eq", key: "metadata.tags", value: "faq" }, ["a", "b0", "b1"]],
      ["ne on an array: no element", { type: "ne", key: "metadata.tags", value: "faq" }, ["c"]],
      ["in on an array", { type: "in", key: "metadata.tags", value: ["billing", "news"] }, ["a", "c"]],
      ["nin on an array", { type: "nin", key: "metadata.tags", value: ["faq"] }, ["c"]],
      ["gte on dates, HTTP and ISO alike", { type: "gte", key: "metadata.last_modified", value: "2026-11-01" }, ["a", "c"]],
      ["lt on dates", { type: "lt", key: "metadata.last_modified", value: "2026-11-01T00:00:00Z" }, ["b0", "b1"]],
      ["gt on an HTTP date to the hour", { type: "gt", key: "metadata.last_modified", value: "2026-11-02T12:00:00Z" }, ["a"]],
      ["source_id eq", { type: "eq", key: "source_id", value: 12 }, ["c", "d", "e"]],
      ["source_id in", { type: "in", key: "source_id", value: [11] }, ["a", "b0", "b1"]],
      ["source_id ne", { type: "ne", key: "source_id", value: 11 }, ["c", "d", "e"]],
      ["source_id nin", { type: "nin", key: "source_id", value: [11, 12] }, []],
      ["document_id eq", { type: "eq", key: "document_id", value: docId("b") }, ["b0", "b1"]],
      ["document_id nin", { type: "nin", key: "document_id", value: [docId("a"), docId("b")] }, ["c", "d", "e"]],
      ["document_id in, an unknown one aside", { type: "in", key: "document_id", value: [docId("c"), "nope"] }, ["c"]],
      ["indexed_at gte an ISO date: per chunk", { type: "gte", key: "indexed_at", value: "2026-03-01" }, ["b1", "c", "d", "e"]],
      ["indexed_at lt epoch ms", { type: "lt", key: "indexed_at", value: Date.parse("2026-02-15") }, ["a", "b0"]],
      ["indexed_at eq", { type: "eq", key: "indexed_at", value: Date.parse("2026-04-10") }, ["d", "e"]],
      [
        "or of and",
        { type: "or", filters: [{ type: "and", filters: [{ type: "eq", key: "source_id", value: 11 }, { type: "eq", key: "metadata.draft", value: true }] }, { type: "eq", key: "metadata.lang", value: 7 }] },
        ["b0", "b1", "d"],
      ],
      ["and across metadata and indexed_at", { type: "and", filters: [{ type: "in", key: "metadata.lang", value: ["en", "de"] }, { type: "lt", key: "indexed_at", value: "2026-03-01" }] }, ["a", "b0"]],
      [
        "and of or of and, three levels",
        {
          type: "and",
          filters: [
            { type: "or", filters: [{ type: "eq", key: "metadata.tags", value: "news" }, { type: "and", filters: [{ type: "eq", key: "source_id", value: 11 }, { type: "gte", key: "metadata.pages", value: 12 }] }] },
            { type: "ne", key: "document_id", value: docId("c") },
          ],
        },
        ["a"],
      ],
    ];

    it.each(cases)("%s", async (_name, filter, expected) => {
      expect(filterProblems(filter)).toEqual([]);
      expect(await labels(filter)).toEqual(expected);
    });

    it("semantic and hybrid searches take the filter too", async () => {
      const filter: SearchFilter = { type: "eq", key: "source_id", value: 12 };
      for (const mode of ["semantic", "hybrid"] as const) expect(await labels(filter, mode)).toEqual(["c", "d", "e"]);
      // Depth 2: the two nearest of c, d and e, whatever lies nearer in other sources.
      const two = await ctx.index().search(query(picked, "semantic", "harbour", harbour, { filter, depth: 2 }));
      expect(two.hits).toHaveLength(2);
      expect(two.hits.every((h) => h.sourceId === 12)).toBe(true);
    });

    it("a filter that leaves no chunk with a vector answers as keyword, like no vectors in scope", async () => {
      const text = "harbour notes";
      const without: IndexedChunk = {
        id: `${picked}-novector`, accountId: picked, sourceId: 13, documentId: docId("novector"), position: 0, title: "Harbour",
        url: "https://harbour.example/novector", content: "harbour notes without a vector", vector: null, indexedAt: BASE, metadata: { lang: "xx" },
      };
      await ctx.index().upsertChunks([without]);
      const res = await ctx.index().search(query(picked, "semantic", text, harbour, { filter: { type: "eq", key: "metadata.lang", value: "xx" } }));
      expect(res).toMatchObject({ modeUsed: "keyword", hits: [expect.objectContaining({ id: without.id })] });
      await ctx.index().deleteChunks(picked, [without.id]);
    });

    it("setDocumentMetadata changes what a document's chunks match, and nothing else", async () => {
      const index = ctx.index();
      const ids = [0, 1].map((p) => `${changed}-m-${p}`);
      await index.upsertChunks(
        ids.map((id, position) => ({
          id, accountId: changed, sourceId: 1, documentId: `${changed}-m`, position, title: "Moorings", url: "https://harbour.example/m",
          content: `Mooring fees, part ${position + 1}`, vector: vectorNear(1), indexedAt: BASE, metadata: { lang: "en", pages: 2 },
        })),
      );
      const found = async (filter?: SearchFilter) =>
        (await index.search(query(changed, "keyword", "mooring", harbour, { filter }))).hits.map((h) => h.id).sort();
      expect(await found({ type: "eq", key: "metadata.lang", value: "en" })).toEqual(ids);
      const before = (await index.search(query(changed, "hybrid", "mooring", vectorNear(1)))).hits;

      await index.setDocumentMetadata(changed, `${changed}-m`, ids, { lang: "de", tags: ["new"] });
      expect(await found({ type: "eq", key: "metadata.lang", value: "en" })).toEqual([]);
      expect(await found({ type: "eq", key: "metadata.lang", value: "de" })).toEqual(ids);
      expect(await found({ type: "gte", key: "metadata.pages", value: 1 })).toEqual([]);
      expect(await found({ type: "eq", key: "metadata.tags", value: "new" })).toEqual(ids);
      const after = (await index.search(query(changed, "hybrid", "mooring", vectorNear(1)))).hits;
      expect(after.map((h) => [h.id, h.title, h.url, h.content, h.score.toFixed(6)])).toEqual(before.map((h) => [h.id, h.title, h.url, h.content, h.score.toFixed(6)]));

      await index.setDocumentMetadata(changed, `${changed}-m`, ids, null);
      expect(await found({ type: "ne", key: "metadata.lang", value: "zz" })).toEqual([]);
      expect(await found({ type: "eq", key: "source_id", value: 1 })).toEqual(ids);
    });

    // Brute force: the engine's unfiltered rankings at full depth, non-matching chunks taken out, cut to k; hybrid
    // fuses the two filtered lists as the engine does (Typesense reads the nearest HYBRID_VECTOR_HITS of depth).
    it("for random filters, each mode's top k is the unfiltered ranking with the non-matching chunks taken out", async () => {
      const index = ctx.index();
      const byId = new Map(corpus.map((c) => [c.id, c]));
      const full = await Promise.all(
        QUERIES.map(async (q) => {
          const at = (mode: SearchMode) => index.search(query(property, mode, q.text, q.vector, { depth: MAX_DEPTH, maxDistance: MAX_DISTANCE }));
          const [keyword, semantic] = await Promise.all([at("keyword"), at("semantic")]);
          expect([keyword.modeUsed, semantic.modeUsed]).toEqual(["keyword", "semantic"]);
          return { keyword: keyword.hits, semantic: semantic.hits };
        }),
      );
      // The unfiltered lists are deep enough to filter: the keyword one reaches past the candidates, the vector one past the cutoff.
      expect(full.every((f) => f.keyword.length > 20 && f.semantic.length > 5 && f.semantic.length < corpus.filter((c) => c.vector).length)).toBe(true);
      const vectorDepth = (k: number) => (index.engine === "typesense" ? Math.ceil(k * HYBRID_VECTOR_HITS) : k);
      let partial = 0;
      let exact = 0;
      for (let t = 0; t < 40; t++) {
        const filter = randomFilter(3);
        expect(filterProblems(filter)).toEqual([]);
        const test = compileFilter(filter);
        const selected = corpus.filter(test);
        if (selected.length > 0 && selected.length < corpus.length) partial++;
        const k = pick([1, 3, 5, 10]);
        const q = QUERIES[t % QUERIES.length]!;
        const ok = (h: ChunkHit) => test(byId.get(h.id)!);
        const keyword = full[t % QUERIES.length]!.keyword.filter(ok);
        const semantic = full[t % QUERIES.length]!.semantic.filter(ok);
        const vectors = selected.some((c) => c.vector);
        const expected: Record<SearchMode, { modeUsed: SearchMode; hits: string[] }> = {
          keyword: { modeUsed: "keyword", hits: ranking(keyword.slice(0, k)) },
          semantic: vectors ? { modeUsed: "semantic", hits: ranking(semantic.slice(0, k)) } : { modeUsed: "keyword", hits: ranking(keyword.slice(0, k)) },
          hybrid: vectors
            ? {
                modeUsed: "hybrid",
                hits: ranking(
                  fuseLists(
                    keyword.slice(0, k).map((h) => ({ id: h.id, score: h.score })),
                    semantic.slice(0, vectorDepth(k)).map((h) => ({ id: h.id, distance: h.vectorDistance! })),
                    ctx.alpha,
                  ).slice(0, k),
                ),
              }
            : { modeUsed: "keyword", hits: ranking(keyword.slice(0, k)) },
        };
        // Typesense ranks its keyword candidates exactly when they fit its budget (the engine's own spec checks the rest).
        const exactKeyword = index.engine !== "typesense" || keywordExact(corpus, q.text, k, test);
        if (exactKeyword) exact++;
        for (const mode of ["keyword", "semantic", "hybrid"] as const) {
          if (expected[mode].modeUsed !== "semantic" && !exactKeyword) continue;
          const res = await index.search(query(property, mode, q.text, q.vector, { filter, depth: k, maxDistance: MAX_DISTANCE }));
          expect({ filter, k, mode, modeUsed: res.modeUsed, hits: ranking(res.hits) }).toEqual({ filter, k, mode, ...expected[mode] });
        }
      }
      // Not vacuous: most filters keep some chunks and drop others, and many keyword rankings are compared (all on the embedded engine).
      expect(partial).toBeGreaterThan(25);
      expect(exact).toBeGreaterThan(10);
    });
  });
}
