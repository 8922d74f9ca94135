import { randomBytes } from "node:crypto";
import { Client } from "typesense";
import { compileFilter, filterProblems, type FilterableChunk, type SearchFilter } from "../../lib/search/filters";
import { filterBy, METADATA_FIELDS, metadataFields } from "../../lib/search/typesense/filters";
import { seeded } from "../harness/fixture-site";

/**
 * The Typesense translation of metadata filters (docs/adr/0058-metadata-filters.md) selects exactly the chunks the
 * predicate does, on the test run's typesense-server (0.24.1 unless TYPESENSE_VERSION says otherwise): random
 * filters over a small random corpus, in a collection of its own.
 */
const url = process.env.TEST_TYPESENSE_URL!;
const client = new Client({ nodes: [{ url }] as never, apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "", logLevel: "warn", connectionTimeoutSeconds: 10 });
const collection = `filters_${randomBytes(4).toString("hex")}`;

const { rnd, pick } = seeded(7);
const DAY = 86_400_000;
const BASE = Date.parse("2026-01-01T00:00:00Z");
const LANGS = ["en", "de", "fr", "a b,c"] as const;
const CITIES = ["New York", "New", "new", "York"] as const;
const SIGNED = [-3, 3, 1.5, 15] as const;

const corpus: (FilterableChunk & { id: string })[] = Array.from({ length: 120 }, (_, i) => {
  const metadata: Record<string, unknown> = {};
  if (rnd(5)) metadata.lang = rnd(6) ? pick(LANGS) : 3; // sometimes a number where others have strings
  if (rnd(4)) metadata.n = rnd(10);
  if (rnd(3)) metadata.draft = rnd(2) === 0;
  if (rnd(3)) metadata.tags = [pick(["x", "y", "z"]), pick(["x", "y", "z"])];
  if (rnd(3)) metadata.last_modified = rnd(2) ? new Date(BASE + rnd(20) * DAY).toUTCString() : new Date(BASE + rnd(20) * DAY).toISOString();
  if (!rnd(8)) metadata.lang = null;
  // Values Typesense's word matching would confuse: words of another value, case, signs and decimal points.
  if (rnd(3)) metadata.city = pick(CITIES);
  if (rnd(3)) metadata.v = pick(SIGNED);
  if (rnd(4)) metadata[pick(["my_key", "my-key", "My_key"])] = "k";
  return { id: `c${i}`, sourceId: 1 + rnd(4), documentId: `d${rnd(30)}`, indexedAt: BASE + rnd(20) * DAY, metadata };
});
// An object value: present for ne/nin, never equal.
corpus.push({ id: "nested", sourceId: 1, documentId: "d0", indexedAt: BASE, metadata: { lang: { code: "en" }, tags: [] } });

const day = () => BASE + rnd(20) * DAY;
const leaf = (): SearchFilter =>
  pick<() => SearchFilter>([
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.lang", value: pick([...LANGS, 3]) }),
    () => ({ type: pick(["in", "nin"] as const), key: "metadata.lang", value: [pick(LANGS), pick([...LANGS, 3])] }),
    () => ({ type: pick(["eq", "ne", "in", "nin"] as const), key: "metadata.tags", value: pick(["x", "y", "z"]) }),
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.draft", value: rnd(2) === 0 }),
    () => ({ type: pick(["eq", "ne", "gt", "gte", "lt", "lte"] as const), key: "metadata.n", value: rnd(10) }),
    () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: "metadata.last_modified", value: new Date(day()).toISOString() }),
    () => ({ type: pick(["eq", "ne", "in", "nin"] as const), key: "metadata.city", value: pick(CITIES) }),
    () => ({ type: pick(["eq", "ne", "in", "nin"] as const), key: "metadata.v", value: pick(SIGNED) }),
    () => ({ type: pick(["ne", "nin"] as const), key: pick(["metadata.my_key", "metadata.my-key", "metadata.My_key"]), value: "other" }),
    () => ({ type: pick(["eq", "ne"] as const), key: "source_id", value: 1 + rnd(4) }),
    () => ({ type: pick(["in", "nin"] as const), key: "source_id", value: [1 + rnd(4), 1 + rnd(4)] }),
    () => ({ type: pick(["eq", "ne"] as const), key: "document_id", value: `d${rnd(30)}` }),
    () => ({ type: pick(["in", "nin"] as const), key: "document_id", value: [`d${rnd(30)}`, `d${rnd(30)}`] }),
    () => ({ type: pick(["eq", "gt", "gte", "lt", "lte"] as const), key: "indexed_at", value: rnd(2) ? day() : new Date(day()).toISOString() }),
  ])();
const randomFilter = (depth: number): SearchFilter =>
  depth === 0 || rnd(3) === 0 ? leaf() : { type: pick(["and", "or"] as const), filters: Array.from({ length: 1 + rnd(3) }, () => randomFilter(depth - 1)) };
// "in"/"nin" leaves above sometimes get a scalar: make every leaf well-formed.
const wellFormed = (f: SearchFilter): SearchFilter =>
  "filters" in f ? { ...f, filters: f.filters.map(wellFormed) } : ["in", "nin"].includes(f.type) && !Array.isArray(f.value) ? { ...f, value: [f.value as string] } : f;

beforeAll(async () => {
  await client.collections().create({
    name: collection,
    fields: [
      { name: "source_id", type: "int32" },
      { name: "document_id", type: "string" },
      { name: "indexed_at", type: "int64" },
      ...METADATA_FIELDS.map((f) => ({ ...f })),
    ],
  } as never);
  const docs = corpus.map((c) => ({ id: c.id, source_id: c.sourceId, document_id: c.documentId, indexed_at: c.indexedAt, ...metadataFields(c.metadata) }));
  const results = await client.collections(collection).documents().import(docs, { action: "create" });
  expect((results as { success: boolean }[]).every((r) => r.success)).toBe(true);
  fields = new Set(((await client.collections(collection).retrieve()) as unknown as { fields: { name: string }[] }).fields.map((f) => f.name));
});
afterAll(async () => {
  await client.collections(collection).delete().catch(() => undefined);
});

/** The collection's fields: a filter may name a metadata field no document created (filterBy decides those). */
let fields: Set<string>;
const has = (field: string) => fields.has(field);

async function selected(filter: SearchFilter): Promise<string[]> {
  const r = await client.collections(collection).documents().search({ q: "*", query_by: "document_id", filter_by: filterBy(filter, has), per_page: 250, include_fields: "id" } as never);
  return (r.hits ?? []).map((h) => (h.document as { id: string }).id).sort();
}

describe(`metadata filters as Typesense filter_by (${url})`, () => {
  it("select what the predicate selects, for hand-picked filters", async () => {
    const filters: SearchFilter[] = [
      { type: "eq", key: "metadata.lang", value: "a b,c" },
      // Exact, not by words: "New" is not "New York" nor "new"; -3 is not 3, 1.5 not 15; my_key is not my-key.
      { type: "eq", key: "metadata.city", value: "New" },
      { type: "ne", key: "metadata.city", value: "new" },
      { type: "in", key: "metadata.city", value: ["York"] },
      { type: "eq", key: "metadata.v", value: -3 },
      { type: "nin", key: "metadata.v", value: [15] },
      { type: "ne", key: "metadata.my_key", value: "other" },
      { type: "ne", key: "metadata.lang", value: "en" },
      { type: "nin", key: "metadata.tags", value: ["x"] },
      { type: "gte", key: "metadata.last_modified", value: "2026-01-10" },
      { type: "or", filters: [{ type: "eq", key: "metadata.draft", value: true }, { type: "lt", key: "metadata.n", value: 3 }] },
      // 0.24.1 has no != on numeric fields: numbers compare equal as strings; built-ins as below-or-above.
      { type: "ne", key: "metadata.n", value: 4 },
      { type: "nin", key: "metadata.lang", value: [3, "en"] },
      { type: "nin", key: "source_id", value: [1, 2] },
      { type: "ne", key: "indexed_at", value: BASE },
      // Names and types no document has: no field to filter on, decided without one.
      { type: "eq", key: "metadata.absent", value: "x" },
      { type: "ne", key: "metadata.draft", value: "yes" },
      { type: "in", key: "metadata.lang", value: [true, "de"] },
      { type: "gt", key: "metadata.lang", value: 2 },
    ];
    for (const f of filters) {
      expect(filterProblems(f)).toEqual([]);
      const p = compileFilter(f);
      expect({ f, ids: await selected(f) }).toEqual({ f, ids: corpus.filter(p).map((c) => c.id).sort() });
    }
  });

  it("select what the predicate selects, for random filters", async () => {
    let checked = 0;
    let partial = 0;
    for (let t = 0; t < 150; t++) {
      const f = wellFormed(randomFilter(3));
      if (filterProblems(f).length) continue;
      const p = compileFilter(f);
      const n = corpus.filter(p).length;
      checked++;
      if (n > 0 && n < corpus.length) partial++;
      expect({ f, by: filterBy(f, has), ids: await selected(f) }).toEqual({ f, by: filterBy(f, has), ids: corpus.filter(p).map((c) => c.id).sort() });
    }
    // The random filters are not vacuous: nearly all are valid, and most select some chunks but not all.
    expect(checked).toBeGreaterThan(140);
    expect(partial).toBeGreaterThan(checked / 2);
  });
});
