import { randomBytes } from "node:crypto";
import { Client } from "typesense";
import { compileFilter, filterProblems, type FilterableChunk, type SearchFilter } from "../../lib/search/filters";
import { fuseLists } from "../../lib/search/fusion";
import type { ChunkHit, IndexedChunk, IndexQuery, SearchMode } from "../../lib/search/port";
import { HYBRID_VECTOR_HITS, TypesenseEngine } from "../../lib/search/typesense/engine";
import { keywordExact } from "./keyword-budget";
import { collectionNames, schemas, vectorCollectionName, vectorSchema } from "../../lib/search/typesense/schema";
import { seeded } from "../harness/fixture-site";

/**
 * Metadata filters inside the Typesense engine (docs/adr/0058-metadata-filters.md), on the test run's
 * typesense-server: for random filters, each mode's filtered top k equals a brute force (the engine's own
 * unfiltered ranking of the whole account, filtered by the predicate, cut to k; hybrid fuses the filtered lists);
 * a metadata-only change; and a collection from before filters, which start brings up to date.
 */
const url = process.env.TEST_TYPESENSE_URL!;
const apiKey = process.env.TEST_TYPESENSE_API_KEY ?? "";
const DIMENSIONS = 8;
const engineOn = (collection: string) => new TypesenseEngine({ url, apiKey, collection, dimensions: DIMENSIONS });

const { rnd, pick } = seeded(11);
const unit = () => {
  const v = Float32Array.from({ length: DIMENSIONS }, () => rnd(2001) / 1000 - 1);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
};
const DAY = 86_400_000;
const BASE = Date.parse("2026-01-01T00:00:00Z");
const WORDS = [
  "harbor", "lantern", "copper", "meadow", "falcon", "granite", "willow", "ember", "glacier", "orchard", "canyon", "saffron",
  "thistle", "beacon", "quarry", "walnut", "pebble", "tundra", "violet", "marble", "heron", "cobalt", "juniper", "oyster",
] as const;
const LANGS = ["en", "de", "fr"] as const;
const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");

/** 40 documents of 3 chunks: metadata, source and date per document; every 7th chunk without a vector. */
function corpus(accountId: number): IndexedChunk[] {
  const chunks: IndexedChunk[] = [];
  for (let d = 0; d < 40; d++) {
    const metadata: Record<string, unknown> = {};
    if (rnd(5)) metadata.lang = rnd(8) ? pick(LANGS) : 3;
    if (rnd(4)) metadata.n = rnd(10);
    if (rnd(3)) metadata.draft = rnd(2) === 0;
    if (rnd(3)) metadata.tags = [pick(["x", "y", "z"]), pick(["x", "y", "z"])];
    if (rnd(3)) metadata.last_modified = new Date(BASE + rnd(20) * DAY)[rnd(2) ? "toUTCString" : "toISOString"]();
    const common = { accountId, sourceId: 1 + rnd(4), documentId: `d${d}`, indexedAt: BASE + rnd(20) * DAY, metadata, url: `https://x.example/${d}` };
    for (let p = 0; p < 3; p++) {
      const id = `d${d}-${p}`;
      chunks.push({ ...common, id, position: p, title: words(1 + rnd(2)), content: words(3 + rnd(10)), vector: chunks.length % 7 ? unit() : null });
    }
  }
  return chunks;
}

const day = () => BASE + rnd(20) * DAY;
const leaf = (): SearchFilter =>
  pick<() => SearchFilter>([
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.lang", value: pick([...LANGS, 3]) }),
    () => ({ type: pick(["in", "nin"] as const), key: "metadata.lang", value: [pick(LANGS), pick([...LANGS, 3])] }),
    () => ({ type: pick(["eq", "ne", "in", "nin"] as const), key: "metadata.tags", value: [pick(["x", "y", "z"])] }),
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.draft", value: rnd(2) === 0 }),
    () => ({ type: pick(["eq", "ne", "gt", "gte", "lt", "lte"] as const), key: "metadata.n", value: rnd(10) }),
    () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: "metadata.last_modified", value: new Date(day()).toISOString() }),
    () => ({ type: pick(["eq", "ne"] as const), key: "source_id", value: 1 + rnd(4) }),
    () => ({ type: pick(["in", "nin"] as const), key: "document_id", value: [`d${rnd(40)}`, `d${rnd(40)}`, `d${rnd(40)}`] }),
    () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: "indexed_at", value: rnd(2) ? day() : new Date(day()).toISOString() }),
  ])();
const randomFilter = (depth: number): SearchFilter =>
  depth === 0 || rnd(3) === 0 ? leaf() : { type: pick(["and", "or"] as const), filters: Array.from({ length: 1 + rnd(3) }, () => randomFilter(depth - 1)) };
// eq / ne take one value: the tags leaf above draws an array for all four.
const wellFormed = (f: SearchFilter): SearchFilter =>
  "filters" in f ? { ...f, filters: f.filters.map(wellFormed) } : ["eq", "ne"].includes(f.type) && Array.isArray(f.value) ? { ...f, value: f.value[0]! } : f;

/** What a filtered search finds, as "<mode used>: <ids, sorted>" (semantic answers as keyword when no vector matches). */
async function found(engine: TypesenseEngine, q: Pick<IndexQuery, "accountId" | "text" | "mode" | "vector" | "filter">): Promise<string> {
  const res = await engine.search({ ...q, vector: q.mode === "keyword" ? null : q.vector, depth: 10, alpha: 0.5, maxDistance: 2 });
  return `${res.modeUsed}: ${res.hits.map((h) => h.id).sort().join(" ")}`;
}

/** Hits as comparable rows: id and score (rounded: floats summed in another order may differ in the last bits). */
const rows = (hits: Pick<ChunkHit, "id" | "score">[]) => hits.map((h) => [h.id, Math.round(h.score * 1e9) / 1e9]);

describe(`Typesense engine: metadata filters inside the ranking (${url})`, () => {
  const engine = engineOn(`efilters_${randomBytes(4).toString("hex")}`);
  const account = 800_000_000 + rnd(90_000_000);
  const chunks = corpus(account);
  const byId = new Map(chunks.map((c) => [c.id, c]));
  const K = 10;
  const ALPHA = 0.4;
  const MAX_DISTANCE = 1.1;
  const query = (text: string, vector: Float32Array, mode: SearchMode, extra: Partial<IndexQuery> = {}): IndexQuery => ({
    accountId: account, text, mode, vector: mode === "keyword" ? null : vector, depth: K, alpha: ALPHA, maxDistance: MAX_DISTANCE, ...extra,
  });

  beforeAll(async () => {
    await engine.start();
    await engine.upsertChunks(chunks);
  });
  afterAll(async () => {
    await engine.dropCollection();
    await engine.stop();
  });

  it("each mode's filtered top k is its unfiltered ranking filtered by the predicate, for random filters", async () => {
    let checked = 0;
    let exactKeyword = 0;
    let beyondTopK = 0;
    for (let t = 0; t < 60; t++) {
      const filter = wellFormed(randomFilter(3));
      expect(filterProblems(filter)).toEqual([]);
      const matching = compileFilter(filter);
      const text = words(1 + rnd(3));
      const vector = unit();
      // The brute force: whole-account lists (all 120 chunks fit the depth), filtered, cut to the depth.
      const allKeyword = (await engine.search(query(text, vector, "keyword", { depth: 250 }))).hits;
      const allVector = (await engine.search(query(text, vector, "semantic", { depth: 250, maxDistance: 2 }))).hits;
      const keyword = allKeyword.filter((h) => matching(byId.get(h.id)!)).slice(0, K);
      const nearest = allVector.filter((h) => matching(byId.get(h.id)!));
      const exact = keywordExact(chunks, text, K, matching);
      if (exact) exactKeyword++;

      for (const mode of ["keyword", "semantic", "hybrid"] as const) {
        const res = await engine.search(query(text, vector, mode, { filter }));
        const label = { filter, text, mode };
        // Whatever the budget allows, no hit outside the filter.
        expect({ ...label, outside: res.hits.filter((h) => !matching(byId.get(h.id)!)).map((h) => h.id) }).toEqual({ ...label, outside: [] });
        // No matching vector: semantic and hybrid answer as keyword.
        const modeUsed = mode === "keyword" || !nearest.length ? "keyword" : mode;
        expect({ ...label, modeUsed: res.modeUsed }).toEqual({ ...label, modeUsed });
        let expected: Pick<ChunkHit, "id" | "score">[];
        if (modeUsed === "semantic") {
          expected = nearest.filter((h) => h.vectorDistance! <= MAX_DISTANCE).slice(0, K);
        } else if (modeUsed === "hybrid") {
          const vectorList = nearest.slice(0, Math.ceil(K * HYBRID_VECTOR_HITS)).filter((h) => h.vectorDistance! <= MAX_DISTANCE);
          const fused = fuseLists(keyword.map((h) => ({ id: h.id, score: h.score })), vectorList.map((h) => ({ id: h.id, distance: h.vectorDistance! })), ALPHA);
          expected = fused.slice(0, K);
          if (!exact) continue;
        } else {
          expected = keyword;
          if (!exact) continue;
        }
        expect({ ...label, hits: rows(res.hits) }).toEqual({ ...label, hits: rows(expected) });
        checked++;
        // The filter reached below the unfiltered top k (a filter applied after ranking would have lost these).
        const unfilteredTop = new Set((mode === "semantic" ? allVector : allKeyword).slice(0, K).map((h) => h.id));
        if (res.hits.some((h) => !unfilteredTop.has(h.id))) beyondTopK++;
      }
    }
    // Not vacuous (seeded: 30 of 60 keyword rankings exact, 120 of 180 compared, 73 reaching below the unfiltered top k).
    expect(exactKeyword).toBeGreaterThan(20);
    expect(checked).toBeGreaterThan(100);
    expect(beyondTopK).toBeGreaterThan(40);
  });

  it("a selective filter on terms common in the account still gets the exact top k (lists sized by the scope's matches)", async () => {
    const other = account + 1;
    const FILLER = "gamma delta epsilon zeta theta iota kappa lambda sigma omega";
    const note = (id: string, team: string, content: string): IndexedChunk => ({
      id, accountId: other, sourceId: 1, documentId: id, position: 0, title: "Note", url: "", content, vector: null, indexedAt: BASE, metadata: { team },
    });
    // In the account both terms are in nearly every chunk, more than a depth of 40 shares; in the team, 60 and 5.
    // Of the team's alpha chunks the 20 with alpha four times are long: last in Typesense's order, first by BM25.
    await engine.upsertChunks([
      ...Array.from({ length: 180 }, (_, i) => note(`out-${i}`, "other", `alpha beta ${FILLER.split(" ").slice(0, i % 10).join(" ")}`)),
      ...Array.from({ length: 40 }, (_, i) => note(`short-${i}`, "core", "alpha")),
      ...Array.from({ length: 20 }, (_, i) => note(`long-${i}`, "core", `alpha alpha alpha alpha ${FILLER}`)),
      ...Array.from({ length: 5 }, (_, i) => note(`beta-${i}`, "core", "beta")),
    ]);
    const filter: SearchFilter = { type: "eq", key: "metadata.team", value: "core" };
    const q = { accountId: other, text: "alpha beta", mode: "keyword" as const, vector: null, alpha: 0.5, maxDistance: 2 };
    const all = (await engine.search({ ...q, depth: 250 })).hits;
    const expected = all.filter((h) => !h.id.startsWith("out-")).slice(0, 40);
    expect(expected.filter((h) => h.id.startsWith("long-")).length).toBe(20);
    expect(rows((await engine.search({ ...q, depth: 40, filter })).hits)).toEqual(rows(expected));
  });
});

describe(`Typesense engine: a document's metadata changes without its text (${url})`, () => {
  const engine = engineOn(`emeta_${randomBytes(4).toString("hex")}`);
  const account = 700_000_000 + rnd(90_000_000);
  const base = { accountId: account, sourceId: 3, documentId: "doc", title: "Harbor notes", url: "https://x.example/doc", indexedAt: BASE, metadata: { lang: "en", tier: 2 } };
  const docChunks: IndexedChunk[] = [
    { ...base, id: "c0", position: 0, content: "harbor lantern copper", vector: unit() },
    { ...base, id: "c1", position: 1, content: "harbor meadow falcon", vector: unit() },
    { ...base, id: "c2", position: 2, content: "harbor granite", vector: null },
  ];
  const other: IndexedChunk = { ...base, id: "o0", documentId: "other", position: 0, content: "harbor willow", vector: unit(), metadata: { lang: "en" } };
  const vector = unit();
  const ids = (mode: SearchMode, filter: SearchFilter) => found(engine, { accountId: account, text: "harbor", mode, vector, filter });

  beforeAll(async () => {
    await engine.start();
    await engine.upsertChunks([...docChunks, other]);
  });
  afterAll(async () => {
    await engine.dropCollection();
    await engine.stop();
  });

  it("its chunks and vectors take the new metadata, keys that went stop matching, the rest stays", async () => {
    const en: SearchFilter = { type: "eq", key: "metadata.lang", value: "en" };
    const hasTier: SearchFilter = { type: "ne", key: "metadata.tier", value: 5 };
    expect(await ids("keyword", en)).toBe("keyword: c0 c1 c2 o0");
    expect(await ids("semantic", hasTier)).toBe("semantic: c0 c1");

    await engine.setDocumentMetadata(account, "doc", ["c0", "c1", "c2"], { lang: "de", reviewed: "2026-02-01" });
    expect(await ids("keyword", en)).toBe("keyword: o0");
    expect(await ids("semantic", en)).toBe("semantic: o0");
    // tier is gone: ne matches only chunks that have the key (no vector matches: semantic answers as keyword).
    expect(await ids("keyword", hasTier)).toBe("keyword: ");
    expect(await ids("semantic", hasTier)).toBe("keyword: ");
    const reviewed: SearchFilter = { type: "gte", key: "metadata.reviewed", value: "2026-01-15" };
    expect(await ids("keyword", reviewed)).toBe("keyword: c0 c1 c2");
    expect(await ids("semantic", reviewed)).toBe("semantic: c0 c1");
    expect(await ids("hybrid", { type: "eq", key: "metadata.lang", value: "de" })).toBe("hybrid: c0 c1 c2");

    await engine.setDocumentMetadata(account, "doc", ["c0", "c1", "c2"], null);
    expect(await ids("keyword", { type: "ne", key: "metadata.lang", value: "xx" })).toBe("keyword: o0");
    expect(await ids("semantic", { type: "ne", key: "metadata.lang", value: "xx" })).toBe("semantic: o0");

    // Text, vectors and what a hit shows are untouched.
    const res = await engine.search({ accountId: account, text: "lantern", mode: "hybrid", vector: docChunks[0]!.vector, depth: 10, alpha: 0.5, maxDistance: 2 });
    expect(res.hits[0]).toMatchObject({ id: "c0", documentId: "doc", sourceId: 3, title: "Harbor notes", content: "harbor lantern copper" });
    expect(res.hits[0]!.vectorDistance!).toBeCloseTo(0, 5);
  });
});

describe(`Typesense engine: collections from before filters (${url})`, () => {
  it("gain the filter fields at start; older chunks become filterable when their metadata is set", async () => {
    const collection = `prefilter_${randomBytes(4).toString("hex")}`;
    const client = new Client({ nodes: [{ url }] as never, apiKey, logLevel: "warn" });
    const names = collectionNames(collection);
    const chunksSchema = schemas(names).chunks;
    const vectors = vectorCollectionName(collection, undefined, DIMENSIONS);
    // The layout before filters: no metadata fields; vectors index tenant ids and the embedding only.
    await client.collections().create({ ...chunksSchema, fields: chunksSchema.fields.filter((f) => !f.name.startsWith("meta_")) } as never);
    await client.collections().create({ ...vectorSchema(vectors, DIMENSIONS), fields: vectorSchema(vectors, DIMENSIONS).fields.slice(0, 3) } as never);
    await client.aliases().upsert(collection, { collection_name: vectors });
    const account = 600_000_000 + rnd(90_000_000);
    const oldVector = unit();
    const stored = { account_id: account, source_id: 1, document_id: "old", position: 0, title: "Old", url: "https://x.example/old", content: "harbor ember" };
    await client.collections(names.chunks).documents().import(
      [{ ...stored, id: "old-0", title_terms: "old", content_terms: "harbor ember", term_count: 4, content_bytes: 12, indexed_at: BASE }],
      { action: "create" },
    );
    await client.collections(vectors).documents().import([{ ...stored, id: "old-0", embedding: Array.from(oldVector) }], { action: "create" });

    const engine = engineOn(collection);
    try {
      await engine.start();
      const fields = async (name: string) => ((await client.collections(name).retrieve()) as unknown as { fields: { name: string }[] }).fields.map((f) => f.name);
      expect(await fields(names.chunks)).toEqual(expect.arrayContaining(["meta_keys", "meta_s_.*", "meta_n_.*", "meta_b_.*", "meta_d_.*"]));
      expect(await fields(vectors)).toEqual(expect.arrayContaining(["document_id", "indexed_at", "meta_keys", "meta_s_.*", "meta_d_.*"]));
      // A second start finds the fields there.
      await engineOn(collection).start();

      await engine.upsertChunks([
        { id: "new-0", accountId: account, sourceId: 1, documentId: "new", position: 0, title: "New", url: "https://x.example/new", content: "harbor copper", vector: unit(), indexedAt: BASE + 5 * DAY, metadata: { lang: "en" } },
      ]);
      const ids = (mode: SearchMode, filter: SearchFilter) => found(engine, { accountId: account, text: "harbor", mode, vector: oldVector, filter });
      const en: SearchFilter = { type: "eq", key: "metadata.lang", value: "en" };
      const dated: SearchFilter = { type: "lte", key: "indexed_at", value: BASE + DAY };
      expect(await ids("keyword", en)).toBe("keyword: new-0");
      expect(await ids("semantic", en)).toBe("semantic: new-0");
      // The PATCH indexed the document ids the old vectors stored; their date they never had (semantic answers as keyword).
      expect(await ids("semantic", { type: "eq", key: "document_id", value: "old" })).toBe("semantic: old-0");
      expect(await ids("keyword", dated)).toBe("keyword: old-0");
      expect(await ids("semantic", dated)).toBe("keyword: old-0");

      await engine.setDocumentMetadata(account, "old", ["old-0"], { lang: "en" });
      expect(await ids("keyword", en)).toBe("keyword: new-0 old-0");
      expect(await ids("semantic", en)).toBe("semantic: new-0 old-0");
      expect(await ids("semantic", dated)).toBe("semantic: old-0");
    } finally {
      await engine.dropCollection();
      await engine.stop();
    }
  });
});
