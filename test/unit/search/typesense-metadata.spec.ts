import { exactToken, metadataFields, metadataUpdate, storedMetadataFields } from "../../../lib/search/typesense/filters";
import { ADDED_FIELDS, collectionNames, missingFields, schemas, vectorSchema } from "../../../lib/search/typesense/schema";

describe("metadata as Typesense fields", () => {
  it("leaves out names a filter cannot address", () => {
    expect(metadataFields({ lang: "en", "a.b": "x", $x: 1, [`k${"e".repeat(70)}`]: true, "my-key": 2 })).toEqual({
      meta_keys: [exactToken("lang"), exactToken("my-key")],
      meta_s_lang: [exactToken("en")],
      "meta_n_my-key": [2],
      "meta_ns_my-key": [exactToken("2")],
    });
  });

  it("stores strings as one word each, different for any two strings (Typesense matches words, without case or symbols)", () => {
    const tokens = ["New York", "new", "New", "-3", "3", "1.5", "15", "my_key", "my-key", "x".repeat(200)].map(exactToken);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const t of tokens) expect(t).toMatch(/^[0-9a-f]{32}$/);
  });

  it("an update nulls every metadata field the stored document has and sets the new ones", () => {
    const stored = { id: "c", title: "t", ...metadataFields({ lang: "en", n: 3 }) };
    expect(metadataUpdate(stored, { lang: "de", when: "2026-01-02" })).toEqual({
      meta_keys: [exactToken("lang"), exactToken("when")],
      meta_s_lang: [exactToken("de")],
      meta_n_n: null,
      meta_ns_n: null,
      meta_s_when: [exactToken("2026-01-02")],
      meta_d_when: [Date.parse("2026-01-02")],
    });
    // No metadata left: meta_keys goes too, so ne / nin stop matching.
    expect(metadataUpdate(stored, null)).toEqual({ meta_keys: null, meta_s_lang: null, meta_n_n: null, meta_ns_n: null });
  });

  it("copies a stored document's metadata fields only", () => {
    expect(storedMetadataFields({ id: "c", account_id: 1, meta_keys: ["a"], meta_s_a: ["x"], title_terms: "t" })).toEqual({ meta_keys: ["a"], meta_s_a: ["x"] });
  });
});

describe("existing collections gain the filter fields", () => {
  const names = collectionNames("x");
  it("a collection from before filters lacks only fields a schema PATCH adds", () => {
    const chunks = schemas(names).chunks;
    const before = chunks.fields.filter((f) => !f.name.startsWith("meta_"));
    expect(missingFields(chunks, before).map((f) => f.name)).toEqual(["meta_keys", "meta_s_.*", "meta_n_.*", "meta_ns_.*", "meta_b_.*", "meta_d_.*"]);
    const vectors = vectorSchema("v", 4);
    const missing = missingFields(vectors, vectors.fields.filter((f) => ["account_id", "source_id", "embedding"].includes(f.name)));
    expect(missing.every((f) => ADDED_FIELDS.has(f.name))).toBe(true);
    expect(missing.map((f) => f.name)).toContain("document_id");
    // A stored-only optional field needs no declaration; any other missing field is not one the PATCH adds.
    expect(missingFields(chunks, chunks.fields.filter((f) => f.name !== "chunk_start")).length).toBe(0);
    expect(ADDED_FIELDS.has("title_terms")).toBe(false);
  });
});
