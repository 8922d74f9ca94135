import { HYBRID_ALPHA_BY_MODEL, MIN_SIMILARITY_BY_MODEL } from "../../lib/search/config";
import { fuseLists } from "../../lib/search/fusion";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS } from "../../lib/search/models";
import { chunkContent, chunkText } from "../../lib/search/chunking";
import { highlight } from "../../lib/search/highlight";
import type { IndexedChunk, IndexQuery, SearchIndex, SearchMode } from "../../lib/search/port";
import { CORPUS, KEYWORD_QUERIES, PARAPHRASE_QUERIES } from "./corpus";
import { searchFilterContract } from "./search-filters.contract";
import { scaled } from "../harness/wait";

/** The calibrated minimum similarity of the bundled model, as a cosine distance. */
const MAX_DISTANCE = 1 - (MIN_SIMILARITY_BY_MODEL[DEFAULT_LOCAL_MODEL] ?? -1);
const ALPHA = HYBRID_ALPHA_BY_MODEL[DEFAULT_LOCAL_MODEL]!;
/** Vector size of the bundled model the contract embeds its corpus with. */
export const CONTRACT_DIMENSIONS = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dimensions;

/** Accounts are distinct per engine run so a shared Typesense collection never mixes test runs. */
function accounts() {
  const base = 900_000_000 + Math.floor(Math.random() * 90_000_000);
  return { a: base, b: base + 1, c: base + 2, d: base + 3, picked: base + 4, property: base + 5, changed: base + 6 };
}

/** A document cut into several chunks, for citations: each hit's range must point back into this text. */
const CITED_TEXT = [
  "The lighthouse keeper climbs the tower at dusk and lights the lantern before the first ship passes the reef.",
  "Every night he trims the wick, polishes the lens and writes the weather into the logbook by hand.",
  "In winter storms the lantern must burn until dawn, so the keeper sleeps in short watches beside the stairs.",
  "Supplies arrive by boat once a month: oil for the lantern, flour, coffee and letters from the mainland.",
  "When the automatic beacon was installed, the keeper stayed on to look after the old lighthouse as a museum.",
].join("\n\n");
const CITED_QUERY = "lighthouse lantern";

/**
 * The one contract both engines must meet. The same labelled corpus is indexed with real embeddings from
 * the bundled model, then ranking, filters, fallbacks, tenant isolation and deletes are checked through
 * the SearchIndex port only.
 */
export function searchIndexContract(name: string, makeIndex: () => Promise<SearchIndex & { dropCollection?(): Promise<void> }>) {
  describe(`SearchIndex contract: ${name}`, () => {
    let index: SearchIndex & { dropCollection?(): Promise<void> };
    const provider = new LocalEmbeddingProvider();
    const vectors = new Map<string, Float32Array>();
    const queryVectors = new Map<string, Float32Array>();
    const { a, b, c, d: cited, ...filterAccounts } = accounts();
    const citedChunks = chunkText(CITED_TEXT, 250, 40);
    const keyOf = (documentId: string) => documentId.split("-")[1]!;

    const chunk = (account: number, sourceId: number, d: (typeof CORPUS)[number], withVector = true): IndexedChunk => ({
      id: `${account}-${d.key}-0`,
      accountId: account,
      sourceId,
      documentId: `${account}-${d.key}`,
      position: 0,
      title: d.title,
      url: d.url,
      content: d.content,
      vector: withVector ? vectors.get(d.key)! : null,
      indexedAt: Date.now(),
    });
    const query = (account: number, text: string, mode: SearchMode, extra: Partial<IndexQuery> = {}): IndexQuery => ({
      accountId: account,
      text,
      mode,
      vector: mode === "keyword" ? null : queryVectors.get(text)!,
      depth: 100,
      alpha: ALPHA,
      maxDistance: MAX_DISTANCE,
      ...extra,
    });

    beforeAll(async () => {
      const docVectors = await provider.embed(CORPUS.map((d) => `${d.title}\n\n${d.content}`));
      CORPUS.forEach((d, i) => vectors.set(d.key, docVectors[i]!));
      const texts = [...PARAPHRASE_QUERIES, ...KEYWORD_QUERIES].map((q) => q.query).concat(CITED_QUERY);
      const qv = await provider.embed(texts, "query");
      texts.forEach((t, i) => queryVectors.set(t, qv[i]!));
      index = await makeIndex();
      await index.start();
      // Account a: the whole corpus, split over sources 1 (first half) and 2 (second half).
      await index.upsertChunks(CORPUS.map((d, i) => chunk(a, i < CORPUS.length / 2 ? 1 : 2, d)));
      // Account b: the same texts, no vectors yet (the embedding stage has not run).
      await index.upsertChunks(CORPUS.map((d) => chunk(b, 7, d, false)));
      // A document in several chunks with their ranges, and one chunk indexed before ranges were kept (none).
      const citedVectors = await provider.embed(citedChunks.map((ch) => `Lighthouse\n\n${ch.text}`));
      await index.upsertChunks([
        ...citedChunks.map((ch, i): IndexedChunk => ({
          id: `${cited}-lighthouse-${ch.position}`,
          accountId: cited,
          sourceId: 5,
          documentId: `${cited}-lighthouse`,
          position: ch.position,
          title: "Lighthouse",
          url: "https://example.com/lighthouse",
          content: ch.text,
          chunkStart: ch.docStart,
          chunkEnd: ch.docEnd,
          vector: citedVectors[i]!,
          indexedAt: Date.now(),
        })),
        { ...chunk(cited, 6, CORPUS[0]!, false), content: "An old lighthouse lantern, indexed before chunk ranges were kept." },
      ]);
    }, scaled(120_000));

    afterAll(async () => {
      await provider.close();
      await index?.dropCollection?.();
      await index?.stop();
    });

    it.each(PARAPHRASE_QUERIES)("semantic: '$query' ranks $relevant first", async ({ query: text, relevant }) => {
      const res = await index.search(query(a, text, "semantic"));
      expect(res.modeUsed).toBe("semantic");
      expect(keyOf(res.hits[0]!.documentId)).toBe(relevant);
    });

    it.each(PARAPHRASE_QUERIES)("hybrid: '$query' ranks $relevant first", async ({ query: text, relevant }) => {
      const res = await index.search(query(a, text, "hybrid"));
      expect(res.modeUsed).toBe("hybrid");
      expect(keyOf(res.hits[0]!.documentId)).toBe(relevant);
    });

    it.each(KEYWORD_QUERIES)("keyword: '$query' ranks $relevant first", async ({ query: text, relevant }) => {
      const res = await index.search(query(a, text, "keyword"));
      expect(res.modeUsed).toBe("keyword");
      expect(keyOf(res.hits[0]!.documentId)).toBe(relevant);
    });

    it("keyword search matches only documents containing a query term (stemmed), best first", async () => {
      const res = await index.search(query(a, "refunded purchases", "keyword"));
      expect(res.hits.map((h) => keyOf(h.documentId))).toEqual(["refund"]);
      expect(res.hits[0]!.score).toBeGreaterThan(0);
    });

    it("keyword search matches chunks containing any query term, not only all of them", async () => {
      const res = await index.search(query(a, "WireGuard chlorophyll levain", "keyword"));
      expect(res.hits.map((h) => keyOf(h.documentId)).sort()).toEqual(["photosynthesis", "sourdough", "vpn"]);
    });

    it("keyword search with only stop words matches nothing", async () => {
      const res = await index.search(query(a, "the of and", "keyword"));
      expect(res).toEqual({ hits: [], modeUsed: "keyword" });
    });

    it("semantic scores are cosine similarities (1 - vector_distance), descending, within the distance threshold", async () => {
      const res = await index.search(query(a, PARAPHRASE_QUERIES[0]!.query, "semantic"));
      expect(res.hits.length).toBeGreaterThan(0);
      for (const [i, h] of res.hits.entries()) {
        expect(h.vectorDistance).toBeGreaterThanOrEqual(0);
        expect(h.vectorDistance).toBeLessThanOrEqual(MAX_DISTANCE + 1e-6);
        expect(h.score).toBeCloseTo(1 - h.vectorDistance!, 5);
        if (i) expect(h.score).toBeLessThanOrEqual(res.hits[i - 1]!.score);
      }
    });

    it("hybrid fuses the keyword and semantic lists of the same query (fuseLists)", async () => {
      const text = KEYWORD_QUERIES[0]!.query;
      const [k, s, h] = await Promise.all(
        (["keyword", "semantic", "hybrid"] as const).map((m) => index.search(query(a, text, m))),
      );
      const expected = fuseLists(
        k.hits.map((x) => ({ id: x.id, score: x.score })),
        s.hits.map((x) => ({ id: x.id, distance: x.vectorDistance! })),
        ALPHA,
      );
      expect(h.hits.map((x) => x.id)).toEqual(expected.map((x) => x.id));
      h.hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(expected[i]!.score, 6));
    });

    it("filters by source: only chunks of the given sources; an unknown source matches nothing", async () => {
      const res = await index.search(query(a, "days", "keyword", { sourceIds: [2] }));
      expect(res.hits.length).toBeGreaterThan(0);
      expect(res.hits.every((h) => h.sourceId === 2)).toBe(true);
      const none = await index.search(query(a, "days", "keyword", { sourceIds: [424242] }));
      expect(none.hits).toEqual([]);
      const semantic = await index.search(query(a, PARAPHRASE_QUERIES[0]!.query, "semantic", { sourceIds: [2] }));
      expect(semantic.hits.every((h) => h.sourceId === 2)).toBe(true);
    });

    it("mode_used tells the truth: no query vector or no vectors in scope means keyword", async () => {
      const text = PARAPHRASE_QUERIES[1]!.query;
      expect((await index.search(query(a, text, "hybrid", { vector: null }))).modeUsed).toBe("keyword");
      expect((await index.search(query(a, text, "semantic", { vector: null }))).modeUsed).toBe("keyword");
      const noVectors = await index.search(query(b, "refund invoice", "hybrid", { vector: queryVectors.get(text)! }));
      expect(noVectors.modeUsed).toBe("keyword");
      expect(keyOf(noVectors.hits[0]!.documentId)).toBe("refund");
    });

    it("vectors added later make the account searchable by meaning", async () => {
      await index.upsertChunks([chunk(c, 3, CORPUS[0]!, false), chunk(c, 3, CORPUS[3]!, false)]);
      const text = PARAPHRASE_QUERIES[3]!.query;
      expect((await index.search(query(c, text, "semantic"))).modeUsed).toBe("keyword");
      await index.setVectors(c, [
        { id: `${c}-password-0`, vector: vectors.get("password")! },
        { id: `${c}-photosynthesis-0`, vector: vectors.get("photosynthesis")! },
      ]);
      const res = await index.search(query(c, text, "semantic"));
      expect(res.modeUsed).toBe("semantic");
      expect(keyOf(res.hits[0]!.documentId)).toBe("photosynthesis");
    });

    it("never returns another account's chunks, whatever the query or source filter", async () => {
      for (const mode of ["keyword", "semantic", "hybrid"] as const) {
        for (const account of [a, b, c]) {
          const res = await index.search(query(account, PARAPHRASE_QUERIES[0]!.query, mode, { sourceIds: [1, 2, 3, 7] }));
          expect(res.hits.every((h) => h.documentId.startsWith(`${account}-`))).toBe(true);
        }
      }
      const stranger = await index.search(query(a + 1000, "password", "hybrid", { vector: queryVectors.get(PARAPHRASE_QUERIES[0]!.query)! }));
      expect(stranger.hits).toEqual([]);
    });

    it("counts documents per account and source", async () => {
      expect(await index.countDocuments(a)).toBe(CORPUS.length);
      expect(await index.countDocuments(a, 1)).toBe(CORPUS.length / 2);
      expect(await index.countDocuments(b, 7)).toBe(CORPUS.length);
      expect(await index.countDocuments(b, 1)).toBe(0);
      const stats = await index.stats(a, 2);
      expect(stats).toMatchObject({ documents: CORPUS.length / 2, chunks: CORPUS.length / 2, vectors: CORPUS.length / 2 });
      expect(stats.sizeBytes).toBeGreaterThan(0);
    });

    it("replaces a document's chunks: the new version matches, the old one no longer does, the document stays", async () => {
      const d = CORPUS[0]!;
      const old = { ...chunk(c, 99, d), id: `${c}-replaced-v1`, documentId: `${c}-replaced` };
      await index.upsertChunks([old]);
      const next = { ...old, id: `${c}-replaced-v2`, content: "Zanzibar quokka itinerary" };
      await index.replaceChunks(c, [next], [old.id]);
      expect((await index.search(query(c, "Zanzibar quokka", "keyword"))).hits.map((h) => h.id)).toEqual([next.id]);
      expect((await index.search(query(c, d.content.split(" ").slice(0, 3).join(" "), "keyword"))).hits.map((h) => h.id)).not.toContain(old.id);
      expect(await index.countDocuments(c, 99)).toBe(1);
      await index.deleteSource(c, 99);
    });

    it("a searcher during a replacement sees the old version or the new one, never neither nor both", async () => {
      const page = (id: string, position: number, content: string) => ({
        ...chunk(c, 98, CORPUS[1]!, false), id: `${c}-swap-${id}`, documentId: `${c}-swap`, position, content,
      });
      const kept = page("kept", 0, "Marmoset ledger opening chapter");
      const before = [kept, page("old", 1, "Marmoset ledger closing chapter, first edition")];
      const after = [kept, page("new", 1, "Marmoset ledger closing chapter, second edition")];
      await index.upsertChunks(before);
      const seen = new Set<string>();
      let done = false;
      const replaced = index.replaceChunks(c, after, [before[1]!.id]).finally(() => (done = true));
      do seen.add((await index.search(query(c, "marmoset ledger", "keyword"))).hits.map((h) => h.id).sort().join(" "));
      while (!done);
      await replaced;
      const versions = [before, after].map((v) => v.map((x) => x.id).sort().join(" "));
      expect([...seen].filter((s) => !versions.includes(s))).toEqual([]);
      expect((await index.search(query(c, "marmoset ledger", "keyword"))).hits.map((h) => h.id).sort().join(" ")).toBe(versions[1]);
      await index.deleteSource(c, 98);
    });

    it("a source re-chunked in one replacement (docs/adr/0059) is seen in its old chunking or its new one, never a mix", async () => {
      const texts = [0, 1, 2].map((n) => [1, 2, 3, 4, 5].map((s) => `Quarry ${n} ledger, section ${s}: the stonemasons log each block. They mark its weight.`).join("\n\n"));
      const layout = (settings: Parameters<typeof chunkContent>[1], tag: string) =>
        texts.flatMap((text, n) =>
          chunkContent(text, settings).map((piece) => ({
            ...chunk(c, 97, CORPUS[2]!, false), id: `${c}-quarry${n}-${tag}-${piece.position}`, documentId: `${c}-quarry${n}`,
            position: piece.position, content: piece.text, chunkStart: piece.docStart, chunkEnd: piece.docEnd,
          })),
        );
      const before = layout({ size: 120, overlap: 0, strategy: "fixed" }, "fixed");
      const after = layout({ size: 200, overlap: 40, strategy: "sentence" }, "sentence");
      expect(before.length).not.toBe(after.length);
      await index.upsertChunks(before);
      const ids = (hits: { id: string }[]) => hits.map((h) => h.id).sort().join(" ");
      const versions = [ids(before), ids(after)];
      const seen = new Set<string>();
      let done = false;
      const replaced = index.replaceChunks(c, after, before.map((x) => x.id)).finally(() => (done = true));
      do seen.add(ids((await index.search(query(c, "quarry ledger", "keyword", { sourceIds: [97], depth: 100 }))).hits));
      while (!done);
      await replaced;
      expect([...seen].filter((v) => !versions.includes(v))).toEqual([]);
      expect(ids((await index.search(query(c, "quarry ledger", "keyword", { sourceIds: [97], depth: 100 }))).hits)).toBe(versions[1]);
      await index.deleteSource(c, 97);
    });

    it.each(["keyword", "semantic", "hybrid"] as const)("%s hits carry a citation: the chunk's range in its document, and a highlight", async (mode) => {
      expect(citedChunks.length).toBeGreaterThan(2);
      const res = await index.search(query(cited, CITED_QUERY, mode, { sourceIds: [5] }));
      expect(res.modeUsed).toBe(mode);
      expect(res.hits.length).toBeGreaterThan(1);
      for (const hit of res.hits) {
        expect(hit).toMatchObject({ documentId: `${cited}-lighthouse`, title: "Lighthouse", url: "https://example.com/lighthouse" });
        expect(CITED_TEXT.slice(hit.chunkStart!, hit.chunkEnd!)).toBe(hit.content);
        expect(hit.content).toBe(citedChunks[hit.position]!.text);
        const marked = highlight(hit.content, CITED_QUERY);
        if (/lighthouse|lantern/i.test(hit.content)) expect(marked).toMatch(/<mark>(lighthouse|lantern)<\/mark>/i);
        else expect(marked).toBe(hit.content.slice(0, marked.length));
      }
      const legacy = await index.search(query(cited, CITED_QUERY, "keyword", { sourceIds: [6] }));
      expect(legacy.hits).toHaveLength(1);
      expect(legacy.hits[0]).toMatchObject({ chunkStart: null, chunkEnd: null });
      expect(highlight(legacy.hits[0]!.content, CITED_QUERY)).toBe("An old <mark>lighthouse</mark> <mark>lantern</mark>, indexed before chunk ranges were kept.");
    });

    it("deleted chunks and sources stop matching at once and leave other accounts alone", async () => {
      await index.deleteChunks(b, [`${b}-vpn-0`]);
      expect((await index.search(query(b, "WireGuard", "keyword"))).hits).toEqual([]);
      expect(keyOf((await index.search(query(a, "WireGuard", "keyword"))).hits[0]!.documentId)).toBe("vpn");
      await index.deleteSource(b, 7);
      expect(await index.countDocuments(b)).toBe(0);
      expect((await index.search(query(b, "refund", "keyword"))).hits).toEqual([]);
      expect(await index.countDocuments(a)).toBe(CORPUS.length);
    });

    searchFilterContract({ index: () => index, accounts: filterAccounts, dimensions: CONTRACT_DIMENSIONS, alpha: ALPHA });
  });
}
