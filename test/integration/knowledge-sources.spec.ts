import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { FIXTURE_PDF, SITEMAP_SITE_PAGES, WIKI_PAGES, WIKI_SPACE, WIKI_TOKEN, sitemapSiteUrls, startFixtureSite, type FixtureSite } from "../harness/fixture-site";
import { until, scaled } from "../harness/wait";

describe("loading real fixture sites end to end: sitemap ceiling, PDF, markdown, wiki", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  const sites: FixtureSite[] = [];

  beforeAll(async () => {
    // The sitemap test lowers the page ceiling so the whole path (loader, index, states) runs in seconds.
    cluster = await startCluster({ database: "knowledge-sources", env: { EMBEDDING_PROVIDER: "none", SITEMAP_PAGE_CEILING: "300" }, nodes: [["gateway"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"]] });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "sources")).token;
  });
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all(sites.map((s) => s.stop()));
  });

  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
  const settle = (id: number, timeoutMs = 60_000) =>
    until(async () => (await call("GET", `/knowledge/${id}`)).body, (s) => ["loaded", "partial", "failed"].includes(s.loading_status), timeoutMs);
  const site = async (kind: Parameters<typeof startFixtureSite>[0]) => {
    const started = await startFixtureSite(kind);
    sites.push(started);
    return started;
  };

  it("a 12,000-page sitemap index past the ceiling: the first pages in sorted order are read, the source ends partial naming read, listed and skipped", async () => {
    // The reader test reads the full 10,000 of 12,000; this cluster's ceiling is 300.
    {
      const fixture = await site("sitemap");
      const created = await call("POST", "/knowledge", { name: "Big site", paths: [`${fixture.baseUrl}/`] });
      expect(created.body.data_type).toBe("sitemap");
      const done = await settle(created.body.id, 120_000);
      expect(done).toMatchObject({ loading_status: "partial", loading_urls_total: 300, loading_urls_done: 300, document_count: 300 });
      expect(done.loading_error).toContain(`300 of ${SITEMAP_SITE_PAGES} listed pages read, ${SITEMAP_SITE_PAGES - 300} skipped`);
      const sorted = [...new Set(sitemapSiteUrls(fixture.baseUrl))].sort();
      const read = (await call("GET", `/knowledge/${created.body.id}/documents?limit=200&offset=0`)).body.total;
      expect(read).toBe(300);
      expect(sorted.slice(0, 300).every((u) => fixture.hits(new URL(u).pathname) > 0)).toBe(true);
      expect(sorted.slice(300).filter((u) => fixture.hits(new URL(u).pathname) > 0)).toEqual([]);
    }
  }, scaled(180_000));

  it("loads a PDF and a markdown file as documents with titles", async () => {
    const fixture = await site("files");
    const pdf = await call("POST", "/knowledge", { paths: [`${fixture.baseUrl}/docs/review.pdf`] });
    const md = await call("POST", "/knowledge", { paths: [`${fixture.baseUrl}/docs/handbook.md`] });
    expect(pdf.body.data_type).toBe("pdf");
    expect(md.body.data_type).toBe("markdown");
    expect(await settle(pdf.body.id)).toMatchObject({ loading_status: "loaded", document_count: 1 });
    expect(await settle(md.body.id)).toMatchObject({ loading_status: "loaded", document_count: 1 });
    const docs = (await call("GET", `/knowledge/${pdf.body.id}/documents`)).body.documents;
    expect(docs[0].title).toBe(FIXTURE_PDF.title);
    // Loaded pages carry metadata as uploaded documents do (docs/adr/0055-uploaded-documents.md).
    const detail = await call("GET", `/knowledge/documents/${docs[0].id}`);
    expect(detail.body.metadata).toMatchObject({ source: "pdf", url: `${fixture.baseUrl}/docs/review.pdf`, title: FIXTURE_PDF.title });
    const hit = await call("POST", "/knowledge/search", { query: "warehouse throughput", knowledge_source_ids: [pdf.body.id] });
    expect(hit.body.results[0].content).toMatch(/Warehouse throughput/);
  }, scaled(120_000));

  it("loads a wiki space through its REST API with a token; a wrong token fails the load", async () => {
    const fixture = await site("wiki");
    const space = `${fixture.baseUrl}/wiki/spaces/${WIKI_SPACE}`;
    const good = await call("POST", "/knowledge", { name: "Engineering wiki", data_type: "wiki", paths: [space], auth_token: WIKI_TOKEN });
    expect(good.status).toBe(201);
    expect(good.body).not.toHaveProperty("auth_token");
    expect(good.body).not.toHaveProperty("credentials");
    expect(await settle(good.body.id)).toMatchObject({ loading_status: "loaded", document_count: WIKI_PAGES });
    const bad = await call("POST", "/knowledge", { data_type: "wiki", paths: [space], auth_token: "wrong-token" });
    const failed = await settle(bad.body.id);
    expect(failed.loading_status).toBe("failed");
    expect(failed.loading_error).toMatch(/401/);
  }, scaled(120_000));
});
