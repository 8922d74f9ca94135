import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import mongoose from "mongoose";
import type { ServiceBroker } from "moleculer";
import { DEFAULT_LOCAL_MODEL } from "../../lib/search/models";
import { loadConfig } from "../../lib/config";
import type { Env } from "../../lib/env";
import { configured } from "../../services";
import SearchService from "../../services/search/search.service";
import { searchModels } from "../../services/search/model";
import type { RestoreReport, SnapshotKeeper } from "../../services/search/snapshots";
import { startCluster, type Cluster } from "../harness/cluster";
import { dropSearchCollections, searchEngines } from "../harness/engines";
import { apiClient, signup, type Api } from "../harness/http";
import { CORPUS, KEYWORD_QUERIES, PARAPHRASE_QUERIES } from "../contract/corpus";
import { scaled } from "../harness/wait";

async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 60_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Snapshots of the embedded index go to a directory of this test file, written soon after writes settle.
const snapshotRoot = fs.mkdtempSync(path.join(os.tmpdir(), "search-spec-"));
/** Settings of every cluster here: the bundled model (unless a test says otherwise), snapshots in snapshotRoot. */
const SEARCH_ENV: Env = { EMBEDDING_PROVIDER: undefined, SEARCH_ENGINE: undefined, SEARCH_SNAPSHOT_DIR: snapshotRoot, SEARCH_SNAPSHOT_SETTLE_MS: "300" };
afterAll(() => {
  fs.rmSync(snapshotRoot, { recursive: true, force: true });
});

/** The loader's side of the boundary: documents of one source, as search.indexDocuments takes them. */
const corpusDocuments = CORPUS.map((d) => ({ url: d.url, title: d.title, content: d.content, metadata: { key: d.key } }));

/** The same REST and internal-action tests on each engine: the embedded one and the test run's Typesense. */
const ENGINES = searchEngines("search_spec");

describe.each(ENGINES)("search over NATS on the $engine engine: gateway, users and api-keys on two nodes, search on a third", ({ engine, env }) => {
  let cluster: Cluster;
  let api: Api;
  let broker: ServiceBroker;
  let owner: { token: string; accountId: number };
  let other: { token: string; accountId: number };
  const keyOf = (url: string) => CORPUS.find((d) => d.url === url)!.key;

  beforeAll(async () => {
    cluster = await startCluster({ database: engine === "embedded" ? "search" : `search-${engine}`, env: { ...SEARCH_ENV, ...env }, extraServices: [SearchService], nodes: [["gateway"], ["users", "api-keys", "knowledge"]] });
    api = apiClient(cluster.baseUrl);
    broker = cluster.brokers[0]!;
    await broker.waitForServices(["search"], 20_000);
    const a = await signup(api, "search-a");
    const b = await signup(api, "search-b");
    owner = { token: a.token, accountId: a.user.account_id };
    other = { token: b.token, accountId: b.user.account_id };
    // The gateway regenerates aliases when it sees the search service.
    await eventually(async () => (await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token })).status === 200, 20_000, "search aliases");

    const first = await broker.call("search.indexDocuments", { accountId: owner.accountId, sourceId: 11, documents: corpusDocuments.slice(0, 5) });
    expect(first).toMatchObject({ received: 5, indexed: 5, unchanged: 0 });
    await broker.call("search.indexDocuments", { accountId: owner.accountId, sourceId: 12, documents: corpusDocuments.slice(5) });
    // The other account has one document with the same text as one of the owner's.
    await broker.call("search.indexDocuments", { accountId: other.accountId, sourceId: 21, documents: [{ url: "https://other.example/pw", title: "Other", content: CORPUS[0]!.content }] });
    await eventually(async () => {
      const stats = await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token });
      return stats.body.index_status === "ready";
    }, 120_000, "all chunks embedded");
  }, scaled(180_000));
  afterAll(async () => {
    await cluster?.stop();
    await dropSearchCollections(env);
  });

  describe("indexing (internal actions)", () => {
    it("documents are keyword-searchable as soon as indexDocuments returns, before any vector exists", async () => {
      const res = await broker.call<{ queued_for_embedding: number }, object>("search.indexDocuments", {
        accountId: other.accountId,
        sourceId: 22,
        documents: [{ url: "https://other.example/fresh", title: "Fresh", content: "Zymurgy is the study of fermentation in brewing." }],
      });
      expect(res.queued_for_embedding).toBe(1);
      const search = await api("POST", "/api/v1/knowledge/documents/search", { token: other.token, body: { query: "zymurgy", mode: "keyword" } });
      expect(search.body.results.map((r: { url: string }) => r.url)).toEqual(["https://other.example/fresh"]);
    });

    it("an unchanged document is not re-chunked or re-embedded; a changed one is", async () => {
      const again = await broker.call("search.indexDocuments", { accountId: owner.accountId, sourceId: 11, documents: corpusDocuments.slice(0, 2) });
      expect(again).toMatchObject({ received: 2, indexed: 0, unchanged: 2, queued_for_embedding: 0 });
      const changed = await broker.call("search.indexDocuments", {
        accountId: owner.accountId,
        sourceId: 11,
        documents: [{ ...corpusDocuments[1]!, content: `${corpusDocuments[1]!.content} Gift cards cannot be refunded.` }],
      });
      expect(changed).toMatchObject({ indexed: 1, unchanged: 0 });
      const res = await api("POST", "/api/v1/knowledge/documents/search", { token: owner.token, body: { query: "gift cards", mode: "keyword" } });
      expect(res.body.results[0]).toMatchObject({ url: CORPUS[1]!.url });
    });

    it("chunks long documents at 1000 characters by default, honouring the source's chunking", async () => {
      const content = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} talks about quasar ${i}.`).join(" ");
      const res = await broker.call<{ chunks: number }, object>("search.indexDocuments", {
        accountId: other.accountId, sourceId: 23, documents: [{ url: "https://other.example/long", content }],
      });
      expect(res.chunks).toBe(Math.ceil(content.length / 900));
      const small = await broker.call<{ chunks: number }, object>("search.indexDocuments", {
        accountId: other.accountId, sourceId: 23, chunking: { size: 500, overlap: 0, strategy: "fixed" }, documents: [{ url: "https://other.example/long", content }],
      });
      expect(small.chunks).toBeGreaterThanOrEqual(Math.ceil(content.length / 500));
    });

    it("stores and indexes half a surrogate pair (a wiki's JSON can escape one) as U+FFFD, which Typesense takes", async () => {
      const res = await broker.call<{ indexed: number; document_ids: string[] }, object>("search.indexDocuments", {
        accountId: other.accountId, sourceId: 24, documents: [{ url: "https://other.example/half", title: "Half \ud83d", content: "Nebula survey \ud83d notes." }],
      });
      expect(res.indexed).toBe(1);
      const doc = await api("GET", `/api/v1/knowledge/documents/${res.document_ids[0]}`, { token: other.token });
      expect(doc.body).toMatchObject({ title: "Half \ufffd", content: "Nebula survey \ufffd notes." });
      const hits = await api("POST", "/api/v1/knowledge/documents/search", { token: other.token, body: { query: "nebula", mode: "keyword" } });
      expect(hits.body.results[0]).toMatchObject({ content: "Nebula survey \ufffd notes." });
    });

    it("counts, stats and pages per source for the loader and the knowledge-sources service", async () => {
      expect(await broker.call("search.countDocuments", { accountId: owner.accountId, sourceId: 11 })).toBe(5);
      expect(await broker.call("search.countDocuments", { accountId: other.accountId, sourceId: 11 })).toBe(0);
      const stats = await broker.call<Record<string, unknown>, object>("search.sourceStats", { accountId: owner.accountId, sourceId: 12 });
      expect(stats).toEqual({
        knowledge_source_id: 12,
        index_name: expect.any(String),
        document_count: 5,
        index_size_bytes: expect.any(Number),
        last_indexed_at: expect.any(String),
      });
      const page = await broker.call<{ documents: { url: string }[]; total: number }, object>("search.sourceDocuments", {
        accountId: owner.accountId, sourceId: 12, limit: 2, offset: 1,
      });
      expect(page).toMatchObject({ total: 5, limit: 2, offset: 1 });
      expect(page.documents).toHaveLength(2);
    });

    it("internal actions are not reachable through the gateway", async () => {
      const res = await api("POST", "/api/v1/search/indexDocuments", { token: owner.token, body: { accountId: owner.accountId } });
      expect(res.status).toBe(404);
    });
  });

  describe("POST /knowledge/documents/search", () => {
    const search = (body: object, token = owner.token) => api("POST", "/api/v1/knowledge/documents/search", { token, body });

    it.each(PARAPHRASE_QUERIES.slice(0, 4))("hybrid (the default) puts the relevant document first for '$query'", async ({ query, relevant }) => {
      const res = await search({ query });
      expect(res.status).toBe(200);
      expect(res.body.mode_used).toBe("hybrid");
      expect(keyOf(res.body.results[0].url)).toBe(relevant);
    });

    it.each(PARAPHRASE_QUERIES.slice(4))("semantic puts the relevant document first for '$query'", async ({ query, relevant }) => {
      const res = await search({ query, mode: "semantic" });
      expect(res.body.mode_used).toBe("semantic");
      expect(keyOf(res.body.results[0].url)).toBe(relevant);
    });

    it.each(KEYWORD_QUERIES)("keyword finds the exact term '$query'", async ({ query, relevant }) => {
      const res = await search({ query, mode: "keyword" });
      expect(res.body.mode_used).toBe("keyword");
      expect(keyOf(res.body.results[0].url)).toBe(relevant);
    });

    it("returns {results, total, mode_used}; each result has a raw score and normalized_score 0-100 with 100 for the best", async () => {
      const res = await search({ query: "how long does delivery of my parcel take", limit: 5 });
      expect(Object.keys(res.body).sort()).toEqual(["mode_used", "results", "total"]);
      const [top, ...rest] = res.body.results;
      expect(top).toMatchObject({ id: expect.any(String), title: expect.any(String), url: expect.any(String), content: expect.any(String), score: expect.any(Number), normalized_score: 100 });
      for (const r of rest) {
        expect(r.normalized_score).toBeGreaterThanOrEqual(0);
        expect(r.normalized_score).toBeLessThanOrEqual(100);
        expect(r.normalized_score).toBeCloseTo((100 * r.score) / top.score, 1);
      }
      expect(new Set(res.body.results.map((r: { id: string }) => r.id)).size).toBe(res.body.results.length);
    });

    it("paginates with limit and offset over one stable ranking; the best of page two is not 100", async () => {
      const all = await search({ query: "days weeks hour", mode: "keyword", limit: 100 });
      expect(all.body.total).toBe(all.body.results.length);
      expect(all.body.total).toBeGreaterThan(3);
      const page = await search({ query: "days weeks hour", mode: "keyword", limit: 2, offset: 1 });
      expect(page.body.total).toBe(all.body.total);
      expect(page.body.results.map((r: { id: string }) => r.id)).toEqual(all.body.results.slice(1, 3).map((r: { id: string }) => r.id));
      expect(page.body.results[0].normalized_score).toBeLessThan(100);
    });

    it("filters by source_ids; ids of other accounts match nothing, numeric strings read as ids, other strings are 422", async () => {
      const res = await search({ query: "days", mode: "keyword", source_ids: [12] });
      expect(res.body.results.length).toBeGreaterThan(0);
      expect(res.body.results.every((r: { source_id: number }) => r.source_id === 12)).toBe(true);
      expect((await search({ query: "days", source_ids: [21] })).body.results).toEqual([]);
      const notAnId = await search({ query: "days", source_ids: ["abc"] });
      expect(notAnId.status).toBe(422);
      expect(notAnId.body.detail[0].loc).toEqual(["body", "source_ids", 0]);
      expect((await search({ query: "days", source_ids: ["12"], mode: "keyword" })).body.results.length).toBe(res.body.results.length);
    });

    it("never shows another account's chunks", async () => {
      const res = await search({ query: CORPUS[0]!.content, limit: 100 }, other.token);
      expect(res.body.results.map((r: { url: string }) => r.url)).not.toContain(CORPUS[0]!.url);
      expect(res.body.results.every((r: { url: string }) => r.url.startsWith("https://other.example/"))).toBe(true);
    });

    it("validates: query 1-1000 characters and not blank, mode enum, limit 1-100, offset >= 0 (422)", async () => {
      expect((await search({ query: " \t " })).body.detail[0].msg).toBe("The 'query' field must not be blank.");
      for (const body of [{ query: "" }, { query: "   " }, { query: "x".repeat(1001) }, { query: "a", mode: "fuzzy" }, { query: "a", limit: 101 }, { query: "a", limit: 0 }, { query: "a", offset: -1 }, {}]) {
        const res = await search(body);
        expect(res.status).toBe(422);
        expect(res.body.detail[0].loc[0]).toBe("body");
      }
    });

    it("needs authentication", async () => {
      expect((await api("POST", "/api/v1/knowledge/documents/search", { body: { query: "x" } })).status).toBe(401);
    });
  });

  describe("POST /knowledge/search (source-level)", () => {
    it("returns chunk content with title and url metadata and a 0..1 score, filtered by min_score and limit", async () => {
      const res = await api("POST", "/api/v1/knowledge/search", { token: owner.token, body: { query: "how do green plants make food from light", limit: 3 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ query: "how do green plants make food from light", total_results: res.body.results.length });
      expect(res.body.results.length).toBeLessThanOrEqual(3);
      expect(res.body.results[0]).toMatchObject({ content: expect.stringContaining("Chlorophyll"), metadata: { title: "Photosynthesis", url: CORPUS[3]!.url }, score: 1 });
      const strict = await api("POST", "/api/v1/knowledge/search", { token: owner.token, body: { query: "how do green plants make food from light", min_score: 0.99 } });
      expect(strict.body.results.every((r: { score: number }) => r.score >= 0.99)).toBe(true);
    });

    it("searches only the caller's sources: another account's source ids match nothing", async () => {
      const res = await api("POST", "/api/v1/knowledge/search", { token: other.token, body: { query: "refund", knowledge_source_ids: [11, 12] } });
      expect(res.body).toMatchObject({ results: [], total_results: 0 });
      const own = await api("POST", "/api/v1/knowledge/search", { token: owner.token, body: { query: "refund", knowledge_source_ids: [11] } });
      expect(own.body.results.length).toBeGreaterThan(0);
    });

    it("validates limit <= 50 and min_score 0..1", async () => {
      for (const body of [{ query: "x", limit: 51 }, { query: "x", min_score: 1.5 }, { query: "x", min_score: -0.1 }]) {
        expect((await api("POST", "/api/v1/knowledge/search", { token: owner.token, body })).status).toBe(422);
      }
    });
  });

  describe("citations on hits", () => {
    const guide = (lead: string) =>
      lead + Array.from({ length: 30 }, (_, i) => `Step ${i} of the beekeeping guide: inspect hive ${i}, find the queen and check the frames.`).join("\n\n");

    it("every hit of both search routes carries document id, url, title, chunk index, the chunk's range in the document and a highlight", async () => {
      const url = "https://other.example/bees";
      const content = guide("");
      await broker.call("search.indexDocuments", { accountId: other.accountId, sourceId: 24, documents: [{ url, title: "Beekeeping", content }] });
      const body = { query: "hive queen", mode: "keyword", knowledge_source_ids: [24], limit: 10 };
      const res = await api("POST", "/api/v1/knowledge/search", { token: other.token, body });
      expect(res.status).toBe(200);
      expect(res.body.results.length).toBeGreaterThan(1);
      const doc = await api("GET", `/api/v1/knowledge/documents/${res.body.results[0].metadata.document_id}`, { token: other.token });
      expect(doc.body.content).toBe(content);
      for (const r of res.body.results) {
        expect(r.metadata).toMatchObject({ document_id: doc.body.id, url, title: "Beekeeping", chunk_index: expect.any(Number) });
        expect(content.slice(r.metadata.chunk_start, r.metadata.chunk_end)).toBe(r.content);
        expect(r.highlight).toMatch(/<mark>(hive|queen)<\/mark>/);
        expect(r.highlight.replace(/<\/?mark>|…/g, "").length).toBeLessThanOrEqual(200);
      }
      const docs = await api("POST", "/api/v1/knowledge/documents/search", { token: other.token, body: { query: "hive queen", mode: "keyword", source_ids: [24] } });
      expect(docs.body.results).toHaveLength(1);
      const [top] = docs.body.results;
      expect(top).toMatchObject({ document_id: doc.body.id, url, title: "Beekeeping", chunk_index: expect.any(Number), highlight: expect.stringContaining("<mark>") });
      expect(content.slice(top.chunk_start, top.chunk_end)).toBe(top.content);
    });

    it("a document indexed before ranges were kept gets them when next sent unchanged: re-chunked, same chunk ids", async () => {
      const content = Array.from({ length: 30 }, (_, i) => `Row ${i} of the orchard plan: prune tree ${i}, move the ladder and pick the pears.`).join("\n\n");
      const doc = { url: "https://other.example/legacy", title: "Legacy", content };
      const first = await broker.call<{ document_ids: string[] }, object>("search.indexDocuments", { accountId: other.accountId, sourceId: 25, documents: [doc] });
      const id = first.document_ids[0]!;
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      try {
        const models = searchModels(conn);
        // As chunks written before ADR 0057 are: no ranges, and an index key without the chunk layout.
        await models.chunks.updateMany({ account_id: other.accountId, document_id: id }, { $unset: { chunk_start: 1, chunk_end: 1 } });
        await models.documents.updateOne({ _id: id, account_id: other.accountId }, { $set: { index_key: "before-ranges" } });
        const ids = (await models.chunks.find({ account_id: other.accountId, document_id: id }, { _id: 1 }).lean()).map((c) => c._id).sort();
        const again = await broker.call("search.indexDocuments", { accountId: other.accountId, sourceId: 25, documents: [doc] });
        expect(again).toMatchObject({ indexed: 1, unchanged: 0 });
        const chunks = await models.chunks.find({ account_id: other.accountId, document_id: id }).sort({ position: 1 }).lean();
        expect(chunks.map((c) => c._id).sort()).toEqual(ids);
        for (const c of chunks) expect(doc.content.slice(c.chunk_start!, c.chunk_end!)).toBe(c.content);
        expect((await broker.call("search.indexDocuments", { accountId: other.accountId, sourceId: 25, documents: [doc] }))).toMatchObject({ indexed: 0, unchanged: 1 });
      } finally {
        await conn.close();
      }
      const res = await api("POST", "/api/v1/knowledge/search", { token: other.token, body: { query: "orchard ladder", mode: "keyword", knowledge_source_ids: [25], limit: 10 } });
      expect(res.body.results.length).toBeGreaterThan(1);
      for (const r of res.body.results) expect(doc.content.slice(r.metadata.chunk_start, r.metadata.chunk_end)).toBe(r.content);
      await broker.call("search.deleteSourceDocuments", { accountId: other.accountId, sourceId: 25 });
    });

    it("re-indexed with blank space changed before them, unchanged chunks get their new ranges", async () => {
      const url = "https://other.example/bees";
      const content = guide("  \r\n\r\n   ");
      await broker.call("search.indexDocuments", { accountId: other.accountId, sourceId: 24, documents: [{ url, title: "Beekeeping", content }] });
      const res = await api("POST", "/api/v1/knowledge/search", { token: other.token, body: { query: "hive queen", mode: "keyword", knowledge_source_ids: [24], limit: 10 } });
      expect(res.body.results.length).toBeGreaterThan(1);
      for (const r of res.body.results) expect(content.slice(r.metadata.chunk_start, r.metadata.chunk_end)).toBe(r.content);
      await broker.call("search.deleteSourceDocuments", { accountId: other.accountId, sourceId: 24 });
    });
  });

  describe("documents: list, get, stats, delete", () => {
    it("lists paginated summaries newest first, filtered by source_id, limit 1-200", async () => {
      const res = await api("GET", "/api/v1/knowledge/documents?limit=3", { token: owner.token });
      expect(res.status).toBe(200);
      expect(res.body.pagination).toEqual({ total: CORPUS.length, skip: 0, limit: 3, has_more: true });
      expect(res.body.data[0]).toEqual({
        id: expect.any(String), title: expect.any(String), content_preview: expect.any(String), url: expect.any(String),
        source_id: expect.any(Number), chunk_count: 1, indexed_at: expect.any(String),
      });
      const bySource = await api("GET", "/api/v1/knowledge/documents?source_id=12&skip=4", { token: owner.token });
      expect(bySource.body.pagination).toEqual({ total: 5, skip: 4, limit: 50, has_more: false });
      expect(bySource.body.data).toHaveLength(1);
      // The reference page's offset names the same start; both given, they must agree.
      const byOffset = await api("GET", "/api/v1/knowledge/documents?source_id=12&offset=4", { token: owner.token });
      expect(byOffset.body.pagination).toEqual(bySource.body.pagination);
      expect(byOffset.body.data).toEqual(bySource.body.data);
      expect((await api("GET", "/api/v1/knowledge/documents?source_id=12&offset=4&skip=4", { token: owner.token })).status).toBe(200);
      expect((await api("GET", "/api/v1/knowledge/documents?offset=4&skip=3", { token: owner.token })).status).toBe(422);
      expect((await api("GET", "/api/v1/knowledge/documents?limit=201", { token: owner.token })).status).toBe(422);
      expect((await api("GET", "/api/v1/knowledge/documents", { token: other.token })).body.data.every((d: { url: string }) => d.url.startsWith("https://other.example/"))).toBe(true);
    });

    it("account stats report the total document count, the index status and the embedding stage's progress", async () => {
      const res = await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token });
      expect(res.body).toMatchObject({ total_documents: CORPUS.length, index_status: "ready", engine, embedding_model: DEFAULT_LOCAL_MODEL });
      expect(res.body).toMatchObject({ pending_chunks: 0, embedding_workers: 2 });
      expect(res.body.embedded_chunks).toBe(res.body.total_chunks);
      // Chunks were embedded in the last minute, so the stage reports a rate.
      expect(res.body.embedding_rate).toBeGreaterThan(0);
    });

    it("gets one document with full content and metadata; 404 when absent, 403 for another account's", async () => {
      const list = await api("GET", "/api/v1/knowledge/documents?source_id=11", { token: owner.token });
      const id = list.body.data[0].id;
      const res = await api("GET", `/api/v1/knowledge/documents/${id}`, { token: owner.token });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, content: expect.any(String), content_hash: expect.stringMatching(/^[0-9a-f]{64}$/), metadata: { key: expect.any(String) } });
      expect((await api("GET", "/api/v1/knowledge/documents/nope", { token: owner.token })).status).toBe(404);
      expect((await api("GET", `/api/v1/knowledge/documents/${id}`, { token: other.token })).status).toBe(403);
      expect((await api("DELETE", `/api/v1/knowledge/documents/${id}`, { token: other.token })).status).toBe(403);
    });

    it("delete is queued: 200 with a job_id, the document answers until the job is done, then 404 and no longer matches", async () => {
      const vpn = CORPUS.find((d) => d.key === "vpn")!;
      const found = await api("POST", "/api/v1/knowledge/documents/search", { token: owner.token, body: { query: "WireGuard", mode: "keyword" } });
      const id = found.body.results[0].id;
      const del = await api("DELETE", `/api/v1/knowledge/documents/${id}`, { token: owner.token });
      expect(del.status).toBe(200);
      expect(del.body).toMatchObject({ job_id: expect.any(String), status: "queued" });
      await eventually(async () => (await api("GET", `/api/v1/knowledge/documents/${id}`, { token: owner.token })).status === 404, 10_000, "document gone");
      const after = await api("POST", "/api/v1/knowledge/documents/search", { token: owner.token, body: { query: "WireGuard", mode: "keyword" } });
      expect(after.body.results.map((r: { url: string }) => r.url)).not.toContain(vpn.url);
      expect(await broker.call("search.countDocuments", { accountId: owner.accountId, sourceId: 12 })).toBe(4);
    });

    it("deleteSourceDocuments removes a whole source and nothing else", async () => {
      const res = await broker.call("search.deleteSourceDocuments", { accountId: other.accountId, sourceId: 23 });
      expect(res).toMatchObject({ deleted_documents: 1 });
      expect(await broker.call("search.countDocuments", { accountId: other.accountId, sourceId: 23 })).toBe(0);
      expect(await broker.call("search.countDocuments", { accountId: other.accountId, sourceId: 21 })).toBe(1);
    });
  });

  // The search service stopped and started again on its node (a restart, or a new configuration).
  const restartQuery = { query: PARAPHRASE_QUERIES[2]!.query, limit: 5 };
  const search = (body: object) => api("POST", "/api/v1/knowledge/documents/search", { token: owner.token, body });
  const searchNode = () => cluster.brokers[cluster.brokers.length - 1]!;
  const searchService = () =>
    searchNode().getLocalService("search") as unknown as { restoreReport?: RestoreReport; snapshots?: SnapshotKeeper; modelSwitch: { done(): Promise<void> } };
  const stopSearch = async () => {
    const node = searchNode();
    await node.destroyService(node.getLocalService("search")!);
  };
  /** Starts the search service again, with this cluster's settings over `settings`. */
  const startSearch = async (settings: Env = {}): Promise<RestoreReport> => {
    const node = searchNode();
    node.createService(configured(SearchService, loadConfig({ ...process.env, ...SEARCH_ENV, ...env, ...settings, MONGO_URL: cluster.mongoUrl })));
    await node.waitForServices(["search"], 20_000);
    await eventually(async () => (await search(restartQuery)).status === 200, 20_000, "search back");
    return searchService().restoreReport!;
  };

  // Snapshots and restarts are the embedded engine's; Typesense keeps the index itself.
  if (engine === "embedded")
  describe("restart", () => {
    const query = restartQuery;
    const snapshotFile = (accountId: number) => path.join(snapshotRoot, "search", String(accountId), "partition.bin");

    it("writes snapshots once writes settle, without a stop", async () => {
      await eventually(
        async () => !searchService().snapshots!.pending.length && fs.existsSync(snapshotFile(owner.accountId)) && fs.existsSync(snapshotFile(other.accountId)),
        20_000,
        "snapshots on disk",
      );
    });

    it("a new search node loads the snapshots instead of rebuilding, and answers the same", async () => {
      const before = await search(query);
      const count = await broker.call("search.countDocuments", { accountId: owner.accountId, sourceId: 12 });
      await stopSearch();
      const report = await startSearch();
      expect(report.firstStart).toBe(false);
      expect(report.rebuilt).toEqual([]);
      expect(report.fromSnapshot).toEqual(expect.arrayContaining([owner.accountId, other.accountId]));
      const after = await search(query);
      expect(after.body.mode_used).toBe("hybrid");
      expect(after.body).toEqual(before.body);
      expect(await broker.call("search.countDocuments", { accountId: owner.accountId, sourceId: 12 })).toBe(count);
    });

    it("a corrupt snapshot is ignored: that account alone is rebuilt from MongoDB and answers the same", async () => {
      const before = await search(query);
      await stopSearch();
      const file = snapshotFile(owner.accountId);
      const fd = fs.openSync(file, "r+");
      fs.writeSync(fd, Buffer.from("garbage"), 0, 7, Math.floor(fs.statSync(file).size / 3));
      fs.closeSync(fd);
      const report = await startSearch();
      expect(report.rebuilt).toEqual([owner.accountId]);
      expect(report.reasons[owner.accountId]).toMatch(/^corrupt/);
      expect(report.fromSnapshot).toContain(other.accountId);
      expect((await search(query)).body).toEqual(before.body);
    });

    it("a database from before snapshots (no generations yet) is rebuilt whole once, then starts from snapshots", async () => {
      const before = await search(query);
      await stopSearch();
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      try {
        await searchModels(conn).state.deleteMany({});
      } finally {
        await conn.close();
      }
      const first = await startSearch();
      expect(first.firstStart).toBe(true);
      expect(first.rebuilt).toEqual(expect.arrayContaining([owner.accountId, other.accountId]));
      expect((await search(query)).body).toEqual(before.body);
      await eventually(async () => !searchService().snapshots!.pending.length, 20_000, "snapshots settled");
      await stopSearch();
      const second = await startSearch();
      expect(second.rebuilt).toEqual([]);
      expect(second.fromSnapshot).toEqual(expect.arrayContaining([owner.accountId, other.accountId]));
    });

    it("finishes a deletion queued before a restart, from the queue", async () => {
      const docs = await api("GET", "/api/v1/knowledge/documents?source_id=21", { token: other.token });
      const id = docs.body.data[0].id;
      await stopSearch();
      // What a process stopped between accepting a DELETE and finishing it leaves behind.
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      try {
        const models = searchModels(conn);
        await models.deletions.create({ _id: id, account_id: other.accountId, job_id: "job-before-restart" });
        await models.documents.updateOne({ _id: id, account_id: other.accountId }, { $set: { deletion_job_id: "job-before-restart" } });
      } finally {
        await conn.close();
      }
      await startSearch();
      await eventually(async () => (await api("GET", `/api/v1/knowledge/documents/${id}`, { token: other.token })).status === 404, 10_000, "document gone");
      expect(await broker.call("search.countDocuments", { accountId: other.accountId, sourceId: 21 })).toBe(0);
    });

    it("a snapshot older than MongoDB (a write, then a crash before the next snapshot) is detected and rebuilt", async () => {
      await eventually(async () => !searchService().snapshots!.pending.length, 20_000, "snapshots settled");
      await stopSearch();
      // What a write cut short by a crash leaves behind: the generation moved on and a chunk is stored.
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      try {
        const models = searchModels(conn);
        await models.state.updateOne({ _id: `account:${owner.accountId}` }, { $inc: { generation: 1 } });
        await models.chunks.create({
          _id: "crashed-write-chunk", account_id: owner.accountId, source_id: 12, document_id: "crashed-write", position: 0,
          title: "Quokka", url: "https://crash.example/quokka", content: "Quokkas are small marsupials of Rottnest Island.",
          embed_key: "none", vector: null, indexed_at: new Date(),
        });
      } finally {
        await conn.close();
      }
      const report = await startSearch();
      expect(report.rebuilt).toEqual([owner.accountId]);
      expect(report.reasons[owner.accountId]).toMatch(/^stale: generation \d+, MongoDB is at \d+/);
      expect(report.fromSnapshot).toContain(other.accountId);
      const res = await search({ query: "quokkas marsupials", mode: "keyword" });
      expect(res.body.results.map((r: { url: string }) => r.url)).toEqual(["https://crash.example/quokka"]);
    });

  });

  describe("embedding model switch", () => {
    const alias = "TYPESENSE_COLLECTION" in env ? env.TYPESENSE_COLLECTION : "";
    /** On Typesense: the alias names this vectors collection, and it is the only one of the test's (text is shared). */
    const expectCollections = async (only: string) => {
      const headers = { "X-TYPESENSE-API-KEY": process.env.TEST_TYPESENSE_API_KEY ?? "" };
      const target = (await (await fetch(`${process.env.TEST_TYPESENSE_URL}/aliases/${alias}`, { headers })).json()) as { collection_name: string };
      expect(target.collection_name).toBe(only);
      const all = (await (await fetch(`${process.env.TEST_TYPESENSE_URL}/collections`, { headers })).json()) as { name: string }[];
      const shared = [`${alias}__chunks`, `${alias}__replacements`];
      expect(all.map((c) => c.name).filter((n) => n.startsWith(alias) && !shared.includes(n))).toEqual([only]);
    };

    it("switches the embedding model without downtime: keyword meanwhile, re-embedded in the background, then vectors of the new model", async () => {
      const semantic = { query: PARAPHRASE_QUERIES[0]!.query, mode: "semantic", limit: 3 };
      const before = await search(semantic);
      expect(before.body.mode_used).toBe("semantic");
      await stopSearch();
      {
        await startSearch({ EMBEDDING_MODEL: "use-lite-512" });
        // Answers at once, as keyword, while the chunks are re-embedded with the other model (512-d).
        const during = await search(semantic);
        expect(during.status).toBe(200);
        if ((await search(semantic)).body.mode_used === "keyword") await searchService().modelSwitch.done();
        const after = await search(semantic);
        expect(after.body.mode_used).toBe("semantic");
        expect(keyOf(after.body.results[0].url)).toBe(PARAPHRASE_QUERIES[0]!.relevant);
        const stats = await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token });
        expect(stats.body).toMatchObject({ embedding_model: "use-lite-512", pending_chunks: 0 });
        expect(stats.body.embedded_chunks).toBe(stats.body.total_chunks);
        expect(during.body.mode_used === "keyword" || during.body.mode_used === "semantic").toBe(true);
        // Typesense: a collection per model, the alias moved to the new one, the previous one dropped.
        if (engine === "typesense") await expectCollections(`${alias}__use-lite-512_512`);
      }
      // And back: the previous model's vectors are still cached, so the switch back is quick.
      await stopSearch();
      await startSearch();
      await searchService().modelSwitch.done();
      expect((await search(semantic)).body.results).toEqual(before.body.results);
      if (engine === "typesense") await expectCollections(`${alias}__${DEFAULT_LOCAL_MODEL}_384`);
    }, scaled(180_000));
  });
});

describe("search without an embedding model (EMBEDDING_PROVIDER=none)", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    cluster = await startCluster({ database: "search-none", env: { ...SEARCH_ENV, EMBEDDING_PROVIDER: "none" }, extraServices: [SearchService], nodes: [["gateway"], ["users", "api-keys", "knowledge"]] });
    api = apiClient(cluster.baseUrl);
    const a = await signup(api, "search-none");
    token = a.token;
    await eventually(async () => (await api("GET", "/api/v1/knowledge/documents/stats", { token })).status === 200, 20_000, "search aliases");
    await cluster.brokers[0]!.call("search.indexDocuments", { accountId: a.user.account_id, sourceId: 1, documents: corpusDocuments });
  }, scaled(60_000));
  afterAll(async () => {
    await cluster?.stop();
  });

  it("falls back to keyword for semantic and hybrid queries and says so in mode_used", async () => {
    for (const mode of ["semantic", "hybrid"]) {
      const res = await api("POST", "/api/v1/knowledge/documents/search", { token, body: { query: "WireGuard tunnel", mode } });
      expect(res.status).toBe(200);
      expect(res.body.mode_used).toBe("keyword");
      expect(res.body.results[0].url).toBe(CORPUS.find((d) => d.key === "vpn")!.url);
    }
    const stats = await api("GET", "/api/v1/knowledge/documents/stats", { token });
    expect(stats.body).toMatchObject({ index_status: "ready", embedded_chunks: 0, embedding_model: null });
  });
});
