import mongoose, { type Connection } from "mongoose";
import type { Logger } from "moleculer";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import { EmbeddedEngine } from "../../lib/search/embedded/engine";
import { EmbedStage, type EmbedJob } from "../../services/search/embed-stage";
import { searchModels, type SearchModels } from "../../services/search/model";
import { databaseUrl } from "../harness/servers";

/**
 * The embedding stage's scheduling against the real MongoDB-compatible server and the embedded engine:
 * batches in flight, each chunk embedded once, back-pressure through the durable queue, the reported rate.
 * The model is a stand-in that counts concurrent calls (the real ones are covered by the search tests).
 */
describe("EmbedStage", () => {
  let conn: Connection;
  let models: SearchModels;
  const logger = { warn() {}, info() {} } as unknown as Logger;

  beforeAll(async () => {
    conn = await mongoose.createConnection(databaseUrl(process.env.TEST_MONGO_URL!, "embed_stage")).asPromise();
    await conn.dropDatabase();
    models = searchModels(conn);
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  function countingProvider() {
    const state = { inFlight: 0, maxInFlight: 0, texts: [] as string[] };
    const provider: EmbeddingProvider = {
      model: "counting",
      dimensions: 2,
      async embed(texts) {
        state.maxInFlight = Math.max(state.maxInFlight, ++state.inFlight);
        state.texts.push(...texts);
        await new Promise((r) => setTimeout(r, 20));
        state.inFlight--;
        return texts.map((_, i) => new Float32Array([1, i]));
      },
      async close() {},
    };
    return { provider, state };
  }

  /** Chunks as indexDocuments leaves them: stored, keyword-indexed, queued durably; then handed to the stage. */
  async function addChunks(stage: EmbedStage, index: EmbeddedEngine, prefix: string, n: number) {
    const jobs: EmbedJob[] = Array.from({ length: n }, (_, i) => ({ accountId: 1, chunkId: `${prefix}${i}`, embedKey: `counting:${prefix}${i}`, text: `text ${prefix} ${i}` }));
    const now = new Date();
    await models.chunks.insertMany(jobs.map((j, i) => ({
      _id: j.chunkId, account_id: 1, source_id: 1, document_id: prefix, position: i, title: "", url: "", content: j.text, embed_key: j.embedKey, vector: null, indexed_at: now,
    })));
    await index.upsertChunks(jobs.map((j, i) => ({ id: j.chunkId, accountId: 1, sourceId: 1, documentId: prefix, position: i, title: "", url: "", content: j.text, vector: null, indexedAt: 0 })));
    await models.pending.insertMany(jobs.map((j) => ({ _id: j.chunkId, account_id: 1, created_at: now })));
    stage.enqueue(jobs);
    return jobs;
  }

  it("keeps `concurrency` batches in flight and embeds every chunk once", async () => {
    const { provider, state } = countingProvider();
    const index = new EmbeddedEngine({ dimensions: 2 });
    const stage = new EmbedStage({ provider, models, index, logger, batchSize: 4, concurrency: 2 });
    const jobs = await addChunks(stage, index, "a", 24);
    stage.enqueue(jobs); // already queued: not embedded twice
    await stage.idle();
    expect(state.maxInFlight).toBe(2);
    expect(state.texts).toHaveLength(24);
    expect((await index.stats(1)).vectors).toBe(24);
    expect(await models.pending.countDocuments({})).toBe(0);
    expect(stage.progress()).toMatchObject({ queued: 0, overflow: false, concurrency: 2 });
    expect(stage.progress().ratePerSecond).toBeGreaterThan(0);
    await stage.stop();
  });

  it("holds at most maxQueued chunks in memory and reads the rest back from the durable queue", async () => {
    const { provider, state } = countingProvider();
    const index = new EmbeddedEngine({ dimensions: 2 });
    const stage = new EmbedStage({ provider, models, index, logger, batchSize: 4, concurrency: 1, maxQueued: 8 });
    await addChunks(stage, index, "b", 30);
    expect(stage.backlog).toBeLessThanOrEqual(8);
    expect(stage.progress().overflow).toBe(true);
    await stage.idle();
    expect(new Set(state.texts).size).toBe(30);
    expect((await index.stats(1)).vectors).toBe(30);
    expect(await models.pending.countDocuments({})).toBe(0);
    expect(stage.progress()).toMatchObject({ queued: 0, overflow: false });
    await stage.stop();
  });
});
