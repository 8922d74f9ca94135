import { randomBytes } from "node:crypto";
import { Client } from "typesense";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { collectionNames, schemas } from "../../lib/search/typesense/schema";
import { CONTRACT_DIMENSIONS, searchIndexContract } from "./search-index.contract";

// The Typesense server of the test run (global setup starts one, or uses TYPESENSE_URL's).
const url = process.env.TEST_TYPESENSE_URL!;

// A collection of its own per run, dropped afterwards.
searchIndexContract(`typesense at ${url}`, async () =>
  new TypesenseEngine({
    url,
    apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "",
    collection: `contract_${randomBytes(4).toString("hex")}`,
    dimensions: CONTRACT_DIMENSIONS,
  }),
);

// Collections created before chunks carried ranges (ADR 0057) are used as they are: no migration, ranges stored.
describe("typesense: a chunks collection from before citation ranges", () => {
  it("is accepted, and stores and returns the ranges of chunks written since", async () => {
    const collection = `ranges_${randomBytes(4).toString("hex")}`;
    const client = new Client({ nodes: [{ url }] as never, apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "", logLevel: "warn" });
    const old = schemas(collectionNames(collection)).chunks;
    await client.collections().create({ ...old, fields: old.fields.filter((f) => !f.name.startsWith("chunk_")) } as never);
    const engine = new TypesenseEngine({ url, apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "", collection, dimensions: CONTRACT_DIMENSIONS });
    try {
      await engine.start();
      const base = { accountId: 5, sourceId: 1, documentId: "d", title: "T", url: "https://x.example", vector: null, indexedAt: Date.now() };
      await engine.upsertChunks([
        { ...base, id: "c0", position: 0, content: "Quokka habitat notes", chunkStart: 0, chunkEnd: 20 },
        { ...base, id: "c1", position: 1, content: "Quokka diet notes" },
      ]);
      const res = await engine.search({ accountId: 5, text: "quokka", mode: "keyword", vector: null, depth: 10, alpha: 0.5, maxDistance: 1 });
      const byId = Object.fromEntries(res.hits.map((h) => [h.id, [h.chunkStart, h.chunkEnd]]));
      expect(byId).toEqual({ c0: [0, 20], c1: [null, null] });
    } finally {
      await engine.dropCollection();
      await engine.stop();
    }
  });
});

// Replicas of the search service start together on a fresh deployment (a chart rollout): each must find the
// collections the others are creating, never mistake them for the layout before 2026-11-24.
describe("typesense: engines starting together on a fresh collection", () => {
  it("all start, and each finds what another wrote", async () => {
    for (let round = 0; round < 3; round++) {
      const collection = `together_${randomBytes(4).toString("hex")}`;
      const engines = Array.from({ length: 6 }, () => new TypesenseEngine({ url, apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "", collection, dimensions: CONTRACT_DIMENSIONS }));
      try {
        await Promise.all(engines.map((engine) => engine.start()));
        const vector = Float32Array.from({ length: CONTRACT_DIMENSIONS }, (_, i) => (i === round ? 1 : 0));
        await engines[round]!.upsertChunks([
          { accountId: 5, sourceId: 1, documentId: "d", title: "T", url: "https://x.example", vector, indexedAt: Date.now(), id: "c0", position: 0, content: "Quokka habitat notes" },
        ]);
        for (const engine of engines) {
          for (const mode of ["keyword", "semantic"] as const) {
            const res = await engine.search({ accountId: 5, text: "quokka", mode, vector, depth: 10, alpha: 0.5, maxDistance: 1 });
            expect(res.hits.map((h) => h.id)).toEqual(["c0"]);
          }
        }
      } finally {
        await engines[0]!.dropCollection();
        await Promise.all(engines.map((engine) => engine.stop()));
      }
    }
  });
});
