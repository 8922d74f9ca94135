import mongoose from "mongoose";
import { chunkContent, type ChunkingSettings } from "../../lib/search/chunking";
import { startCluster, type Cluster } from "../harness/cluster";
import { dropSearchCollections, searchEngines } from "../harness/engines";
import { apiClient, signup, type Api } from "../harness/http";
import { until } from "../harness/wait";

/** Markdown handbook pages: sections under headings, sentences of varied length, a shared word to search for. */
function handbookPage(topic: string, n: number): string {
  const sentence = (i: number) => `The ${topic} harbour rule ${i} says ${"that ".repeat(i % 5)}crews check the moorings before dusk.`;
  const section = (title: string, from: number) => `## ${title}\n\n${Array.from({ length: 9 }, (_, i) => sentence(from + i)).join(" ")}\n`;
  return [`# ${topic} handbook ${n}`, "", section("Arrival", 0), section("Mooring", 10), section("Departure", 20)].join("\n");
}

interface Hit {
  document_id: string;
  content: string;
  chunk_index: number;
  chunk_start: number | null;
  chunk_end: number | null;
}
interface Source {
  id: number;
  chunking: ChunkingSettings | null;
  rechunk: { status: string; job_id: string; error: string | null; documents_done: number; documents_total: number | null } | null;
}

/**
 * Per-source chunking through the REST API (docs/adr/0059-chunking-per-source.md), on both engines: a source
 * created with chunking, its uploaded documents cut by it, a change re-chunking them in the background while
 * searches keep answering, and the hits' chunk ranges following the new settings once the source switched.
 */
describe.each(searchEngines("chunking"))("chunking per source on the $engine engine (issue 26 item 3)", ({ engine, env: engineEnv }) => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let accountId: number;
  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
  /** Stored content of each document, by id (what chunk ranges point into). */
  const contents = new Map<string, string>();
  let source: Source;

  beforeAll(async () => {
    cluster = await startCluster({
      database: `knowledge-chunking-${engine}`,
      // Empty: the bundled local model, so a re-chunk re-embeds for real.
      env: { EMBEDDING_PROVIDER: "", ...engineEnv },
      nodes: [["gateway"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"]],
    });
    api = apiClient(cluster.baseUrl);
    const owner = await signup(api, `chunking-${engine}`);
    token = owner.token;
    accountId = owner.user.account_id;
  });
  afterAll(async () => {
    await cluster?.stop();
    await dropSearchCollections(engineEnv);
  });

  const getSource = async () => (await call("GET", `/knowledge/${source.id}`)).body as Source;
  const search = async (query = "moorings harbour") => {
    const res = await call("POST", "/knowledge/documents/search", { query, mode: "keyword", source_ids: [source.id], limit: 100 });
    expect(res.status).toBe(200);
    return res.body.results as Hit[];
  };
  /** Which of the given settings made this hit's chunk (its index, range and text), if any. */
  const madeBy = (hit: Hit, candidates: ChunkingSettings[]) =>
    candidates.filter((s) => {
      const chunk = chunkContent(contents.get(hit.document_id)!, s)[hit.chunk_index];
      return chunk && chunk.docStart === hit.chunk_start && chunk.docEnd === hit.chunk_end && chunk.text === hit.content;
    });
  const waitForRechunk = (jobId: string) =>
    until(getSource, (s) => s.rechunk?.job_id === jobId && ["done", "failed"].includes(s.rechunk.status), 120_000, "the re-chunk to end");

  const sentence: ChunkingSettings = { size: 400, overlap: 120, strategy: "sentence" };
  const heading: ChunkingSettings = { size: 600, overlap: 50, strategy: "heading" };
  const fixed: ChunkingSettings = { size: 250, overlap: 0, strategy: "fixed" };

  it("refuses chunking out of bounds or of an unknown strategy (422, naming the field)", async () => {
    for (const [chunking, field] of [
      [{ size: 99 }, "chunking.size"],
      [{ size: 8001 }, "chunking.size"],
      [{ size: 400, overlap: 201 }, "chunking.overlap"],
      [{ overlap: -1 }, "chunking.overlap"],
      [{ strategy: "paragraph" }, "chunking.strategy"],
      [{ size: 400, words: 3 }, "chunking"],
    ] as const) {
      const res = await call("POST", "/knowledge", { name: "Bad", data_type: "upload", paths: [], chunking });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.body)).toContain(field);
    }
  });

  it("creates a source with chunking and cuts its uploaded documents by it", async () => {
    const created = await call("POST", "/knowledge", { name: "Harbour handbooks", data_type: "upload", paths: [], chunking: { strategy: "sentence", size: 400, overlap: 120 } });
    expect(created.status).toBe(201);
    source = created.body;
    expect(source.chunking).toEqual(sentence);
    expect(source.rechunk).toBeNull();
    for (const [i, topic] of ["North", "South", "East"].entries()) {
      const added = await call("POST", `/knowledge/${source.id}/documents`, { title: `${topic} handbook`, text: handbookPage(topic, i), metadata: { topic } });
      expect(added.status).toBe(201);
      contents.set(added.body.id, added.body.content);
    }
    const hits = await search();
    expect(hits.length).toBe(3);
    for (const hit of hits) expect(madeBy(hit, [sentence])).toEqual([sentence]);
    // Without settings of its own, a source shows null (the deployment's default, fixed 1000/100).
    const plain = await call("POST", "/knowledge", { name: "Plain", data_type: "upload", paths: [] });
    expect(plain.body.chunking).toBeNull();
  });

  it("re-chunks and re-embeds after a change while searches answer from the old chunks, then switches at once", async () => {
    const patched = await call("PATCH", `/knowledge/${source.id}`, { chunking: { strategy: "heading", size: 600, overlap: 50 } });
    expect(patched.status).toBe(200);
    expect(patched.body.chunking).toEqual(heading);
    expect(patched.body.rechunk).toMatchObject({ status: "queued", job_id: expect.stringMatching(/^rechunk_/) });
    const jobId = patched.body.rechunk.job_id as string;

    // Searching all along: every answer has every document, and each answer's chunks come from one chunking, the
    // old or the new (the embedded engine swaps in one change; Typesense hides the new chunks until the old are hidden).
    const answers: { layouts: ChunkingSettings[][]; status: string }[] = [];
    let done: Source | undefined;
    while (!done) {
      const status = (await getSource()).rechunk!.status;
      const hits = await search();
      answers.push({ layouts: hits.map((h) => madeBy(h, [sentence, heading])), status });
      expect(new Set(hits.map((h) => h.document_id)).size).toBe(3);
      if (status === "done" || status === "failed") done = await waitForRechunk(jobId);
    }
    expect(done.rechunk).toMatchObject({ status: "done", error: null, documents_done: 3, documents_total: 3, finished_at: expect.any(String) });
    expect(answers[0]!.layouts.flat()).toContain(sentence);
    for (const a of answers) {
      for (const layout of a.layouts) expect(layout.length).toBeGreaterThan(0);
      expect(new Set(a.layouts.flat()).size).toBe(1);
    }

    // Afterwards every hit's chunk range is one the new settings make: whole sections, no chunk across a heading.
    const after = await search();
    for (const hit of after) {
      expect(madeBy(hit, [heading]).length ? "ok" : JSON.stringify([madeBy(hit, [sentence]), hit])).toBe("ok");
      expect(hit.content.slice(3).includes("\n## ")).toBe(false);
    }
    // The new chunks came with their vectors (phase 1 embedded them): nothing waits for the embedding stage.
    const stats = (await call("GET", "/knowledge/documents/stats")).body;
    expect(stats).toMatchObject({ pending_chunks: 0 });
    const hybrid = await call("POST", "/knowledge/documents/search", { query: "when do crews check the moorings", mode: "hybrid", source_ids: [source.id] });
    expect(hybrid.body.mode_used).toBe("hybrid");
  });

  /** An HTML file's sections: the reader drops the markup and marks where each heading begins. */
  const htmlSections = ["Anchoring", "Tides", "Signals"];
  let htmlDoc: string;
  /** The HTML document's chunks, as the source-level search returns them (each chunk, not each document). */
  const htmlChunks = async () => {
    const res = await call("POST", "/knowledge/search", { query: "lighthouse beacon", mode: "keyword", knowledge_source_ids: [source.id], limit: 50 });
    return (res.body.results as { content: string; metadata: { document_id: string } }[]).filter((r) => r.metadata.document_id === htmlDoc);
  };

  it("cuts an uploaded HTML file at its headings, which the reader marks though the text keeps no markup", async () => {
    const body = htmlSections.map((h, i) => `<h2>${h}</h2><p>The lighthouse beacon turns ${i + 2} times a minute. Keepers log every turn.</p>`).join("");
    const html = `<html><head><title>Beacon guide</title></head><body><main><h1>Beacon guide</h1><p>Intro to the lighthouse beacon.</p>${body}</main></body></html>`;
    const added = await call("POST", `/knowledge/${source.id}/documents`, { file: { filename: "beacon.html", content_type: "text/html", data: Buffer.from(html).toString("base64") } });
    expect(added.status).toBe(201);
    htmlDoc = added.body.id;
    contents.set(htmlDoc, added.body.content);
    expect(added.body.content).not.toContain("<h2>");
    const chunks = await htmlChunks();
    expect(chunks.map((c) => c.content.split("\n")[0]).sort()).toEqual(["Beacon guide", ...htmlSections].sort());
  });

  it("a second change while a re-chunk is queued or runs ends with the latest settings", async () => {
    const first = await call("PATCH", `/knowledge/${source.id}`, { chunking: { strategy: "sentence", size: 300 } });
    expect(first.body.chunking).toEqual({ strategy: "sentence", size: 300, overlap: 50 });
    // The second change lands while the first re-chunk is queued or running (or just done, on a fast run).
    await until(getSource, (s) => s.rechunk?.status !== "queued", 60_000, "the first re-chunk to start");
    const second = await call("PUT", `/knowledge/${source.id}`, { chunking: { strategy: "fixed", size: 250, overlap: 0 } });
    expect(second.body.chunking).toEqual(fixed);
    const done = await waitForRechunk(second.body.rechunk.job_id);
    expect(done.rechunk!.status).toBe("done");
    for (const hit of await search()) expect(madeBy(hit, [fixed])).toEqual([fixed]);
  });

  it("chunking null goes back to the deployment's default", async () => {
    const res = await call("PATCH", `/knowledge/${source.id}`, { chunking: null });
    expect(res.body.chunking).toBeNull();
    await waitForRechunk(res.body.rechunk.job_id);
    const deployment: ChunkingSettings = { size: 1000, overlap: 100, strategy: "fixed" };
    for (const hit of await search()) expect(madeBy(hit, [deployment])).toEqual([deployment]);
  });

  it("a re-chunk whose loader died mid-way is taken over from its saved page and finishes", async () => {
    // As a loader that died after warming the first document leaves it: the source on the new settings, its job
    // running under a lease that has run out, progress saved (written straight to the database, as that loader had).
    const settings: ChunkingSettings = { size: 350, overlap: 0, strategy: "sentence" };
    const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    try {
      const [first] = [...contents.keys()].sort();
      const jobId = `rechunk_takeover${engine}`;
      const key = { _id: source.id as never, account_id: accountId };
      await conn.collection("knowledge_sources").updateOne(key, { $set: { chunking: settings, "rechunk.job_id": jobId, "rechunk.status": "running" } });
      await conn.collection("load_jobs").insertOne({
        _id: jobId as never, kind: "rechunk", account_id: key.account_id, knowledge_source_id: source.id, status: "running", force: false, trigger: "manual", window: 1,
        progress: { chunking: settings, phase: "warm", after: first, done: 1 }, lease_owner: "a-loader-that-died", lease_expires_at: new Date(Date.now() - 1000),
        attempts: 1, error: null, queued_at: new Date(), created_at: new Date(), updated_at: new Date(),
      });
      const done = await waitForRechunk(jobId);
      expect(done.rechunk).toMatchObject({ status: "done", documents_done: contents.size });
      // The source says done first; the job is marked done just after.
      const job = await until(() => conn.collection("load_jobs").findOne({ _id: jobId as never }), (j) => j?.status === "done", 10_000, "the job to be marked done");
      expect(job).toMatchObject({ status: "done", attempts: 2 });
    } finally {
      await conn.close();
    }
    for (const hit of await search()) expect(madeBy(hit, [settings])).toEqual([settings]);
  });

  it("a re-chunk back to heading uses the section marks kept with the document", async () => {
    const res = await call("PATCH", `/knowledge/${source.id}`, { chunking: heading });
    expect((await waitForRechunk(res.body.rechunk.job_id)).rechunk!.status).toBe("done");
    expect((await htmlChunks()).map((c) => c.content.split("\n")[0]).sort()).toEqual(["Beacon guide", ...htmlSections].sort());
  });
});
