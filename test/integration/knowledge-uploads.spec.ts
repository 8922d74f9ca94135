import { startCluster, type Cluster } from "../harness/cluster";
import { dropSearchCollections, searchEngines } from "../harness/engines";
import { FIXTURE_PDF, minimalPdf } from "../harness/fixture-site";
import { apiClient, signup, type Api } from "../harness/http";
import { until } from "../harness/wait";
import { wellFormed } from "../../lib/text";

/** Limits of this cluster, small so the tests reach them (docs/deploy.md lists the settings); the file limit is the default. */
const MAX_FILE_BYTES = 512 * 1024;
const MAX_TEXT_CHARS = 20_000;
const MAX_DOCUMENTS = 6;

const MARKDOWN = "# Lighthouse keeping\n\nThe **lighthouse** keeper trims the wick every evening.\n";
const TEXT = "Orchard notes\nThe pear orchard blossoms in early April.\n";
const HTML = "<html><head><title>Beekeeping basics</title></head><body><main><h1>Beekeeping basics</h1><p>A healthy hive needs a strong queen.</p></main></body></html>";

describe.each(searchEngines("uploads"))("documents added to an upload knowledge source on the $engine engine (issue 26, item 1)", ({ engine, env }) => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let other: string;
  /** knowledge_source.* events as a subscriber on its own node receives them. */
  const announced: { event: string; account_id: number; data: { id: number; document_count?: number } }[] = [];
  const listener = {
    name: "upload-listener",
    events: {
      "knowledge_source.*"(ctx: { eventName: string; params: { account_id: number; data: { id: number; document_count?: number } } }) {
        announced.push({ event: ctx.eventName, ...ctx.params });
      },
    },
  };

  beforeAll(async () => {
    cluster = await startCluster({
      database: `knowledge-uploads-${engine}`,
      env: {
        ...env,
        EMBEDDING_PROVIDER: "none",
        UPLOAD_MAX_TEXT_CHARS: String(MAX_TEXT_CHARS),
        UPLOAD_MAX_DOCUMENTS_PER_SOURCE: String(MAX_DOCUMENTS),
      },
      nodes: [["gateway"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"]],
      extraServices: [listener],
    });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "uploads")).token;
    other = (await signup(api, "uploads-outsider")).token;
  });
  afterAll(async () => {
    await cluster?.stop();
    await dropSearchCollections(env);
  });

  const call = (method: string, path: string, body?: unknown, t = token) => api(method, `/api/v1${path}`, { token: t, body });
  /** A multipart/form-data request with a `file` part and text fields. */
  const upload = async (method: string, path: string, file: { name: string; type: string; data: Buffer | string }, fields: Record<string, string> = {}, t = token) => {
    const form = new FormData();
    form.append("file", new Blob([file.data], { type: file.type }), file.name);
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const res = await fetch(`${cluster.baseUrl}/api/v1${path}`, { method, headers: { authorization: `Bearer ${t}` }, body: form });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  const newSource = async (name: string) => {
    const created = await call("POST", "/knowledge", { name, data_type: "upload", paths: [] });
    expect(created.status).toBe(201);
    return created.body as { id: number; data_type: string; loading_status: string };
  };
  const search = async (id: number, query: string) => (await call("POST", "/knowledge/search", { query, knowledge_source_ids: [id], mode: "keyword" })).body.results as { content: string; metadata: { title: string; url: string } }[];

  let source: { id: number };
  const ids: Record<string, string> = {};

  it("creates an upload source with no paths, and queues no load", async () => {
    source = await newSource("Handbook uploads");
    expect(source).toMatchObject({ data_type: "upload", loading_status: "unloaded" });
    // Other data types still need a path.
    const bad = await call("POST", "/knowledge", { name: "No paths", data_type: "website", paths: [] });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain("paths");
  });

  it("takes a PDF, a markdown, a text and an HTML file (multipart) and a JSON text; each is searchable", async () => {
    const pdf = await upload("POST", `/knowledge/${source.id}/documents`, { name: "review.pdf", type: "application/pdf", data: minimalPdf(FIXTURE_PDF.title, FIXTURE_PDF.pages) }, { metadata: JSON.stringify({ team: "ops" }) });
    expect(pdf.status).toBe(201);
    expect(pdf.body).toMatchObject({ title: FIXTURE_PDF.title, source_id: source.id, metadata: { team: "ops", source: "upload", format: "pdf", filename: "review.pdf" } });
    expect(pdf.body.content).toMatch(/Warehouse throughput/);
    expect(pdf.headers.get("location")).toBe(`/api/v1/knowledge/${source.id}/documents/${pdf.body.id}`);
    ids.pdf = pdf.body.id;

    const md = await upload("POST", `/knowledge/${source.id}/documents`, { name: "lighthouse.md", type: "text/markdown", data: MARKDOWN });
    expect(md.status).toBe(201);
    expect(md.body).toMatchObject({ title: "Lighthouse keeping", metadata: { format: "markdown" } });
    expect(md.body.content).not.toContain("**");
    ids.md = md.body.id;

    const txt = await upload("POST", `/knowledge/${source.id}/documents`, { name: "orchard.txt", type: "text/plain", data: TEXT }, { title: "Orchard" });
    expect(txt.status).toBe(201);
    expect(txt.body).toMatchObject({ title: "Orchard", metadata: { format: "text" } });
    ids.txt = txt.body.id;

    const html = await upload("POST", `/knowledge/${source.id}/documents`, { name: "bees.html", type: "text/html", data: HTML });
    expect(html.status).toBe(201);
    expect(html.body.title).toBe("Beekeeping basics");
    expect(html.body.content).toContain("strong queen");
    expect(html.body.content).not.toContain("<p>");
    ids.html = html.body.id;

    const json = await call("POST", `/knowledge/${source.id}/documents`, { title: "Ferry timetable", text: "The harbour ferry leaves at nine.", url: "https://example.com/ferry", metadata: { lang: "en" } });
    expect(json.status).toBe(201);
    expect(json.body).toMatchObject({ title: "Ferry timetable", url: "https://example.com/ferry", metadata: { lang: "en", format: "text", url: "https://example.com/ferry" } });
    ids.json = json.body.id;

    expect((await search(source.id, "warehouse throughput"))[0]!.content).toMatch(/Warehouse throughput/);
    expect((await search(source.id, "lighthouse wick"))[0]!.metadata.title).toBe("Lighthouse keeping");
    expect((await search(source.id, "pear orchard"))[0]!.metadata.title).toBe("Orchard");
    expect((await search(source.id, "queen hive"))[0]!.metadata.title).toBe("Beekeeping basics");
    expect((await search(source.id, "harbour ferry"))[0]!.metadata.url).toBe("https://example.com/ferry");

    const shown = await call("GET", `/knowledge/${source.id}`);
    expect(shown.body).toMatchObject({ document_count: 5, loading_status: "loaded" });
    const listed = await call("GET", `/knowledge/${source.id}/documents`);
    expect(listed.body.total).toBe(5);
  });

  it("records a knowledge_source.updated event with the new count for each change", async () => {
    const event = await until(async () => announced.find((e) => e.event === "knowledge_source.updated" && e.data.id === source.id && e.data.document_count === 5), Boolean, 5000);
    expect(event!.account_id).toEqual(expect.any(Number));
  });

  it("gets, replaces and deletes one document", async () => {
    const got = await call("GET", `/knowledge/${source.id}/documents/${ids.txt}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: ids.txt, title: "Orchard" });
    expect(got.body.content).toContain("pear orchard");

    const replaced = await call("PUT", `/knowledge/${source.id}/documents/${ids.txt}`, { title: "Orchard (revised)", text: "The apple orchard blossoms in May.", metadata: { rev: 2 } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: ids.txt, title: "Orchard (revised)", metadata: { rev: 2 } });
    expect(await search(source.id, "pear")).toEqual([]);
    expect((await search(source.id, "apple orchard"))[0]!.metadata.title).toBe("Orchard (revised)");

    // The same text with new metadata: nothing to re-chunk, the metadata still changes.
    const relabelled = await call("PUT", `/knowledge/${source.id}/documents/${ids.txt}`, { title: "Orchard (revised)", text: "The apple orchard blossoms in May.", metadata: { rev: 3 } });
    expect(relabelled.body.metadata).toMatchObject({ rev: 3 });
    expect((await call("GET", `/knowledge/${source.id}/documents/${ids.txt}`)).body.metadata).toMatchObject({ rev: 3 });

    const byFile = await upload("PUT", `/knowledge/${source.id}/documents/${ids.md}`, { name: "lighthouse.md", type: "text/markdown", data: "# Lighthouse keeping\n\nThe keeper now polishes the lens.\n" });
    expect(byFile.status).toBe(200);
    expect(byFile.body.content).toContain("polishes the lens");

    const moved = await call("PUT", `/knowledge/${source.id}/documents/${ids.json}`, { text: "x", url: "https://example.com/elsewhere" });
    expect(moved.status).toBe(422);
    // A document read and sent back keeps its url, an upload's own upload:// one included.
    const asRead = (await call("GET", `/knowledge/${source.id}/documents/${ids.txt}`)).body;
    expect(asRead.url).toMatch(/^upload:\/\//);
    const sentBack = await call("PUT", `/knowledge/${source.id}/documents/${ids.txt}`, { title: asRead.title, text: asRead.content, url: asRead.url, metadata: { rev: 4 } });
    expect(sentBack.status).toBe(200);
    expect(sentBack.body).toMatchObject({ id: ids.txt, url: asRead.url, metadata: { rev: 4 } });

    const removed = await call("DELETE", `/knowledge/${source.id}/documents/${ids.html}`);
    expect(removed.status).toBe(204);
    expect((await call("GET", `/knowledge/${source.id}/documents/${ids.html}`)).status).toBe(404);
    expect(await search(source.id, "queen hive")).toEqual([]);
    expect((await call("GET", `/knowledge/${source.id}`)).body.document_count).toBe(4);
    await until(async () => announced.find((e) => e.event === "knowledge_source.updated" && e.data.id === source.id && e.data.document_count === 4), Boolean, 5000);
  });

  it("refuses bad input with 422 and oversized input with 413, writing nothing", async () => {
    const before = (await call("GET", `/knowledge/${source.id}/documents`)).body.total;
    const problems: [string, Promise<{ status: number; body: unknown }>][] = [
      ["neither file nor text", call("POST", `/knowledge/${source.id}/documents`, { title: "Empty" })],
      ["both file and text", call("POST", `/knowledge/${source.id}/documents`, { text: "a", file: { filename: "a.txt", data: Buffer.from("a").toString("base64") } })],
      ["unknown field", call("POST", `/knowledge/${source.id}/documents`, { text: "a", colour: "red" })],
      ["metadata not an object", call("POST", `/knowledge/${source.id}/documents`, { text: "a", metadata: "x" })],
      ["file data not base64", call("POST", `/knowledge/${source.id}/documents`, { file: { filename: "a.txt", data: "!!!not base64" } })],
      ["unsupported format", upload("POST", `/knowledge/${source.id}/documents`, { name: "report.docx", type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", data: "PK\u0003\u0004" })],
      ["a .pdf that is not one", upload("POST", `/knowledge/${source.id}/documents`, { name: "fake.pdf", type: "application/pdf", data: "not a pdf at all" })],
      ["a file with no text", upload("POST", `/knowledge/${source.id}/documents`, { name: "blank.txt", type: "text/plain", data: "   \n  " })],
      ["binary bytes named .txt", upload("POST", `/knowledge/${source.id}/documents`, { name: "image.txt", type: "text/plain", data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x1a, 0x0a]) })],
    ];
    for (const [why, pending] of problems) {
      const res = await pending;
      expect([why, res.status]).toEqual([why, 422]);
      expect(res.body).toHaveProperty("detail");
    }
    const bigFile = await upload("POST", `/knowledge/${source.id}/documents`, { name: "big.txt", type: "text/plain", data: "word ".repeat(MAX_FILE_BYTES / 4) });
    expect(bigFile.status).toBe(413);
    expect(bigFile.body).toMatchObject({ detail: expect.stringMatching(/bytes/), limit_bytes: MAX_FILE_BYTES });
    // A file just under the limit crosses NATS (base64) to the knowledge service, which refuses its long text.
    const nearLimit = await upload("POST", `/knowledge/${source.id}/documents`, { name: "near.txt", type: "text/plain", data: "word ".repeat(MAX_FILE_BYTES / 5 - 10) });
    expect(nearLimit.status).toBe(413);
    expect(nearLimit.body).toMatchObject({ detail: expect.stringMatching(/characters/), limit_chars: MAX_TEXT_CHARS });
    const longText = await call("POST", `/knowledge/${source.id}/documents`, { text: "y".repeat(MAX_TEXT_CHARS + 1) });
    expect(longText.status).toBe(413);
    expect((await call("GET", `/knowledge/${source.id}/documents`)).body.total).toBe(before);

    // A source of another data type takes no uploads.
    const site = await call("POST", "/knowledge?auto_load=false", { name: "Site", data_type: "website", paths: ["https://example.com/"] });
    expect((await call("POST", `/knowledge/${site.body.id}/documents`, { text: "hello" })).status).toBe(422);

    // The count limit: the source holds MAX_DOCUMENTS at most.
    const full = await newSource("Full");
    for (let i = 0; i < MAX_DOCUMENTS; i++) expect((await call("POST", `/knowledge/${full.id}/documents`, { text: `note ${i}` })).status).toBe(201);
    const over = await call("POST", `/knowledge/${full.id}/documents`, { text: "one too many" });
    expect(over.status).toBe(422);
    expect(JSON.stringify(over.body)).toContain(String(MAX_DOCUMENTS));
  });

  it("keeps free-form metadata as sent: dotted and $ keys, nested arrays", async () => {
    const own = await newSource("Free-form metadata");
    const metadata = { "a.b": 1, $where: "x", grid: [[1, 2], [[3]]], nested: { "x.y": [{ $in: [] }] } };
    const created = await call("POST", `/knowledge/${own.id}/documents`, { text: "Tide tables for the harbour.", metadata });
    expect(created.status).toBe(201);
    expect(created.body.metadata).toMatchObject(metadata);
    expect((await call("GET", `/knowledge/${own.id}/documents/${created.body.id}`)).body.metadata).toMatchObject(metadata);
    const relabelled = await call("PUT", `/knowledge/${own.id}/documents/${created.body.id}`, { text: "Tide tables for the harbour.", metadata: { "c.d": [[true]] } });
    expect(relabelled.status).toBe(200);
    expect((await call("GET", `/knowledge/${own.id}/documents/${created.body.id}`)).body.metadata).toMatchObject({ "c.d": [[true]] });
  });

  it("counts characters, not UTF-16 units, and never indexes half an emoji (Typesense refuses one)", async () => {
    const own = await newSource("Emoji");
    // A title of the documented maximum (1000 characters) in emoji, and a text with no break where its chunks end:
    // 9 units before the emoji, so the 1000th unit is the second half of one.
    const title = "🧊".repeat(1000);
    const text = `glacier, ${"🧊".repeat(2500)}`;
    const created = await call("POST", `/knowledge/${own.id}/documents`, { title, text });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ title, content: text });
    expect((await call("POST", `/knowledge/${own.id}/documents`, { title: `${title}🧊`, text })).status).toBe(422);
    const hits = (await call("POST", "/knowledge/documents/search", { query: "glacier", source_ids: [String(own.id)], mode: "keyword", limit: 10 })).body.results as { content: string }[];
    expect(hits).toHaveLength(1);
    expect(hits[0]!.content.startsWith("glacier, 🧊")).toBe(true);
    expect(wellFormed(hits[0]!.content)).toBe(true);
    const chunks = (await call("GET", `/knowledge/${own.id}/documents/${created.body.id}`)).body;
    expect(chunks).toMatchObject({ chunk_count: expect.any(Number) });
    expect(chunks.chunk_count).toBeGreaterThan(2);
  });

  it("keeps other accounts out", async () => {
    expect((await call("GET", `/knowledge/${source.id}/documents/${ids.pdf}`, undefined, other)).status).toBe(403);
    expect((await call("POST", `/knowledge/${source.id}/documents`, { text: "intruder" }, other)).status).toBe(403);
    expect((await call("DELETE", `/knowledge/${source.id}/documents/${ids.pdf}`, undefined, other)).status).toBe(403);
    // Another source of one's own does not reach this source's documents either.
    const mine = await newSource("Other box");
    expect((await call("GET", `/knowledge/${mine.id}/documents/${ids.pdf}`)).status).toBe(404);
    expect((await call("DELETE", `/knowledge/${mine.id}/documents/${ids.pdf}`)).status).toBe(404);
  });

  it("a preload (reload) of an upload source queues nothing and keeps its documents; a refresh policy is refused", async () => {
    const preload = await call("POST", `/knowledge/${source.id}/preload?force=true`);
    expect(preload.status).toBe(200);
    expect(preload.body).toMatchObject({ status: "skipped" });
    expect((await call("PUT", `/knowledge/${source.id}`, { refresh: { interval_seconds: 3600 } })).status).toBe(422);
    expect((await call("GET", `/knowledge/${source.id}/documents`)).body.total).toBe(4);
    expect((await call("GET", `/knowledge/${source.id}`)).body).toMatchObject({ document_count: 4, loading_status: "loaded" });
  });

  it("the OpenAPI document offers the upload as JSON and as multipart/form-data with a binary file part", async () => {
    const doc = (await api("GET", "/api/v1/openapi.json")).body;
    for (const [path, method] of [["/api/v1/knowledge/{knowledge_source_id}/documents", "post"], ["/api/v1/knowledge/{knowledge_source_id}/documents/{document_id}", "put"]] as const) {
      const op = doc.paths[path][method];
      expect(op.operationId).toEqual(expect.any(String));
      expect(op.requestBody.content["application/json"].schema.properties.file.type).toBe("object");
      const form = op.requestBody.content["multipart/form-data"].schema;
      expect(form).toMatchObject({ additionalProperties: false, properties: { file: { type: "string", contentMediaType: "application/octet-stream" }, metadata: { type: "string" }, text: { type: "string" } } });
    }
    expect(Object.keys(doc.paths["/api/v1/knowledge/{knowledge_source_id}/documents/{document_id}"]).sort()).toEqual(["delete", "get", "put"]);
  });

  it("lists a source's documents from offset, or skip as the account's listing names it", async () => {
    const byOffset = await call("GET", `/knowledge/${source.id}/documents?offset=1&limit=2`);
    expect(byOffset.status).toBe(200);
    expect(byOffset.body.documents).toHaveLength(2);
    expect((await call("GET", `/knowledge/${source.id}/documents?skip=1&limit=2`)).body).toEqual(byOffset.body);
    expect((await call("GET", `/knowledge/${source.id}/documents?skip=1&offset=2`)).status).toBe(422);
  });

  it("a document deleted through the account index leaves its source's document_count too", async () => {
    const before = (await call("GET", `/knowledge/${source.id}`)).body.document_count as number;
    const added = await call("POST", `/knowledge/${source.id}/documents`, { title: "Passing note", text: "A passing note about quaggas." });
    expect(added.status).toBe(201);
    expect((await call("GET", `/knowledge/${source.id}`)).body.document_count).toBe(before + 1);
    expect((await call("DELETE", `/knowledge/documents/${added.body.id}`)).status).toBe(200);
    await until(async () => (await call("GET", `/knowledge/${source.id}`)).body.document_count, (n) => n === before, 10_000);
    await until(async () => announced.find((e) => e.event === "knowledge_source.updated" && e.data.id === source.id && e.data.document_count === before), Boolean, 5000);
  });

  it("takes no document into a source whose deletion is queued (409), and leaves none behind a deletion under way", async () => {
    const doomed = await newSource("Doomed uploads");
    for (let i = 0; i < 3; i++) expect((await call("POST", `/knowledge/${doomed.id}/documents`, { title: `early ${i}`, text: `Early note ${i} on zebroids.` })).status).toBe(201);
    // Uploads racing the DELETE (up to the source's limit of MAX_DOCUMENTS): each is indexed and kept, or answered
    // 409 and removed, never a 500 or an orphan.
    const racing = Array.from({ length: MAX_DOCUMENTS - 3 }, (_, i) => call("POST", `/knowledge/${doomed.id}/documents`, { title: `late ${i}`, text: `Late note ${i} on zebroids.` }));
    expect((await call("DELETE", `/knowledge/${doomed.id}`)).status).toBe(200);
    expect((await Promise.all(racing)).map((r) => r.status).filter((s) => s !== 201 && s !== 409 && s !== 404)).toEqual([]);
    const after = await call("POST", `/knowledge/${doomed.id}/documents`, { title: "too late", text: "Too late." });
    expect([409, 404]).toContain(after.status);
    if (after.status === 409) expect(after.body.detail).toMatch(/being deleted/);
    expect([409, 404]).toContain((await call("POST", `/knowledge/${doomed.id}/preload`)).status);
    await until(async () => (await call("GET", `/knowledge/${doomed.id}`)).status, (s) => s === 404, 30_000);
    expect((await call("GET", `/knowledge/documents?source_id=${doomed.id}`)).body.pagination.total).toBe(0);
    expect((await call("POST", "/knowledge/documents/search", { query: "zebroids", mode: "keyword" })).body.total).toBe(0);
  });

  it("deleting the source deletes its uploaded documents", async () => {
    expect((await call("DELETE", `/knowledge/${source.id}`)).status).toBe(200);
    await until(async () => (await call("GET", `/knowledge/${source.id}`)).status, (s) => s === 404, 30_000);
    expect((await call("GET", `/knowledge/documents/${ids.pdf}`)).status).toBe(404);
    expect((await call("GET", `/knowledge/documents?source_id=${source.id}`)).body.pagination.total).toBe(0);
  });
});
