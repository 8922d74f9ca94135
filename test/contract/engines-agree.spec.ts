import { randomBytes } from "node:crypto";
import { MIN_SIMILARITY_BY_MODEL } from "../../lib/search/config";
import { EmbeddedEngine } from "../../lib/search/embedded/engine";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { DEFAULT_LOCAL_MODEL } from "../../lib/search/models";
import { SEARCH_MODES, type IndexedChunk, type IndexResult } from "../../lib/search/port";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { CORPUS, KEYWORD_QUERIES, PARAPHRASE_QUERIES } from "./corpus";
import { CONTRACT_DIMENSIONS } from "./search-index.contract";
import { scaled } from "../harness/wait";

/**
 * The two engines are one behaviour: the same chunks and queries give the same hits in the same order with
 * the same scores in every mode (BM25, cosine similarity, fused rank score), on the test run's Typesense.
 */
describe("embedded engine and Typesense agree", () => {
  const provider = new LocalEmbeddingProvider();
  const embedded = new EmbeddedEngine({ dimensions: CONTRACT_DIMENSIONS });
  const typesense = new TypesenseEngine({
    url: process.env.TEST_TYPESENSE_URL!,
    apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "",
    collection: `agree_${randomBytes(4).toString("hex")}`,
    dimensions: CONTRACT_DIMENSIONS,
  });
  const account = 800_000_000 + Math.floor(Math.random() * 90_000_000);
  const queries = [...PARAPHRASE_QUERIES, ...KEYWORD_QUERIES].map((q) => q.query).concat("days of the year", "password reset link email");
  const queryVectors = new Map<string, Float32Array>();

  beforeAll(async () => {
    const qv = await provider.embed(queries, "query");
    queries.forEach((q, i) => queryVectors.set(q, qv[i]!));
    // Two chunks per document, so BM25 lengths and document frequencies differ between chunks.
    const halves = CORPUS.map((d) => {
      const sentences = d.content.split(". ");
      const half = Math.ceil(sentences.length / 2);
      return [sentences.slice(0, half).join(". "), sentences.slice(half).join(". ")];
    });
    const vectors = await provider.embed(CORPUS.flatMap((d, i) => halves[i]!.map((content) => `${d.title}\n\n${content}`)));
    const chunks: IndexedChunk[] = CORPUS.flatMap((d, i) =>
      halves[i]!.map((content, position) => ({
        id: `${account}-${d.key}-${position}`,
        accountId: account,
        sourceId: 1 + (i % 3),
        documentId: `${account}-${d.key}`,
        position,
        title: d.title,
        url: d.url,
        content,
        vector: vectors[2 * i + position]!,
        indexedAt: 0,
      })),
    );
    await typesense.start();
    await Promise.all([embedded.upsertChunks(chunks), typesense.upsertChunks(chunks)]);
  }, scaled(120_000));

  afterAll(async () => {
    await provider.close();
    await typesense.dropCollection();
    await Promise.all([typesense.stop(), embedded.stop()]);
  });

  const shape = (r: IndexResult) => ({ modeUsed: r.modeUsed, hits: r.hits.map((h) => ({ id: h.id, score: Number(h.score.toFixed(4)) })) });

  it.each(SEARCH_MODES.flatMap((mode) => [undefined, [1, 3]].map((sourceIds) => ({ mode, sourceIds }))))(
    "$mode (sources $sourceIds): same hits, order and scores",
    async ({ mode, sourceIds }) => {
      for (const text of queries) {
        const q = {
          accountId: account,
          text,
          mode,
          vector: mode === "keyword" ? null : queryVectors.get(text)!,
          sourceIds,
          depth: 100,
          alpha: 0.3,
          maxDistance: 1 - MIN_SIMILARITY_BY_MODEL[DEFAULT_LOCAL_MODEL]!,
        };
        const [e, t] = await Promise.all([embedded.search(q), typesense.search(q)]);
        expect({ text, ...shape(t) }).toEqual({ text, ...shape(e) });
      }
    },
  );
});
