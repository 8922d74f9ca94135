import http from "node:http";
import type { AddressInfo } from "node:net";
import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { until } from "../harness/wait";

/** Words that make each fixture page distinct and searchable. */
const TOPICS = ["volcano", "glacier", "lagoon", "canyon", "prairie", "tundra", "savanna", "fjord", "mesa", "delta"];

function page(title: string, body: string, links: string[] = []) {
  const nav = links.map((l) => `<a href="${l}">${l}</a>`).join(" ");
  return `<html><head><title>${title}</title></head><body><nav>${nav} menu home</nav><main><h1>${title}</h1><p>${body}</p></main><footer>copyright</footer></body></html>`;
}

/**
 * Fixture sites on 127.0.0.1: /map (robots.txt + sitemap, 6 pages), /crawl (no sitemap, linked pages with
 * a cycle), /broken (every page fails), /slow (many slow pages, for windows and killed loaders).
 */
function startSites(): Promise<{ base: string; stop(): Promise<void>; hits: Map<string, number> }> {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
    const send = (status: number, type: string, body: string, delay = 0) =>
      setTimeout(() => res.writeHead(status, { "content-type": type }).end(body), delay);
    const host = `http://${req.headers.host}`;
    const [, site, rest] = url.pathname.match(/^\/([^/]+)(\/.*)?$/) ?? [];
    // Two hosts on one server: 127.0.0.1 announces a sitemap, localhost has none (so it is crawled).
    const sitemapLine = req.headers.host?.startsWith("localhost") ? "" : `Sitemap: ${host}/map/sitemap.xml\n`;
    if (url.pathname === "/robots.txt") return send(200, "text/plain", `User-agent: *\nDisallow: /crawl/private\n${sitemapLine}`);
    if (site === "map" && rest === "/sitemap.xml") {
      const locs = TOPICS.slice(0, 6).map((t) => `<url><loc>${host}/map/${t}</loc></url>`).join("");
      return send(200, "application/xml", `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
    }
    // A sitemap index one of whose sitemaps is missing.
    if (site === "idx" && rest === "/sitemap.xml") {
      const maps = [`${host}/map/sitemap.xml`, `${host}/idx/missing.xml`].map((loc) => `<sitemap><loc>${loc}</loc></sitemap>`).join("");
      return send(200, "application/xml", `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${maps}</sitemapindex>`);
    }
    if (site === "map" && rest) {
      const topic = rest.slice(1);
      return send(200, "text/html", page(`All about the ${topic}`, `The ${topic} is a remarkable landform. ${topic} facts and figures.`));
    }
    if (site === "crawl") {
      const topic = rest && rest !== "/" ? rest.slice(1) : "start";
      const links = ["/crawl/", "/crawl/lagoon", "/crawl/canyon", "/crawl/canyon#top", "/crawl/prairie?", "/crawl/private"];
      return send(200, "text/html", page(`Crawl ${topic}`, `Crawled page about the ${topic} landscape and its ecology.`, links));
    }
    // Directory-style URLs: only the spellings with a trailing slash exist, and links are relative to them.
    if (site === "dirs" && (rest === "/" || rest === "/sub/")) {
      return send(200, "text/html", page(`Dirs ${rest}`, `Directory page ${rest} about the ${rest === "/" ? "tundra" : "steppe"}.`, ["sub/"]));
    }
    if (site === "broken") return send(500, "text/plain", "boom");
    if (site === "slow") {
      const n = Number(url.searchParams.get("n") ?? 40);
      if (rest === "/sitemap.xml") {
        const locs = Array.from({ length: n }, (_, i) => `<url><loc>${host}/slow/p${i}</loc></url>`).join("");
        return send(200, "application/xml", `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
      }
      return send(200, "text/html", page(`Slow page ${rest}`, `Slow content number ${rest} about ${TOPICS[Number(rest?.slice(2)) % 10]}.`), 250);
    }
    send(404, "text/plain", "not found");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, stop: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

describe("knowledge sources and background loading over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let other: string;
  let sites: Awaited<ReturnType<typeof startSites>>;
  const spawned: ServiceProcess[] = [];
  /** knowledge_source.* events as a subscriber on its own node receives them. */
  const announced: { event: string; account_id: number; data: { id: number; loading_status: string } }[] = [];
  /** The event announcing how a source's load ended (its knowledge_source.created comes first). */
  const loadEnd = (id: number) => announced.find((e) => e.data.id === id && /\.(loaded|partial|failed)$/.test(e.event));
  const listener = {
    name: "load-listener",
    events: {
      "knowledge_source.*"(ctx: { eventName: string; params: { account_id: number; data: { id: number; loading_status: string } } }) {
        announced.push({ event: ctx.eventName, ...ctx.params });
      },
    },
  };

  beforeAll(async () => {
    sites = await startSites();
    cluster = await startCluster({
      database: "knowledge",
      env: { EMBEDDING_PROVIDER: "none" },
      nodes: [["gateway"], ["users", "api-keys", "knowledge", "search"], ["knowledge-loader"]],
      extraServices: [listener],
    });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "knowledge")).token;
    other = (await signup(api, "outsider")).token;
  });
  afterAll(async () => {
    await Promise.all(spawned.map((p) => p.kill()));
    await cluster?.stop();
    await sites?.stop();
  });

  const call = (method: string, path: string, body?: unknown, t = token) => api(method, `/api/v1${path}`, { token: t, body });
  const poll = (id: number, statuses: string[], timeoutMs?: number) =>
    until(async () => (await call("GET", `/knowledge/${id}`)).body, (s) => statuses.includes(s.loading_status), timeoutMs);

  it("resolves auto to sitemap, answers unloaded at once, then loads every page in the background", async () => {
    const created = await call("POST", "/knowledge", { paths: [`${sites.base}/map/`] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(Number),
      identifier: expect.any(String),
      name: "127.0.0.1",
      description: "127.0.0.1",
      data_type: "sitemap",
      loading_status: "unloaded",
      document_count: 0,
      loading_urls_total: null,
      loading_urls_done: 0,
      loading_error: null,
      loaded_at: null,
    });
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: 6, loading_urls_total: 6, loading_urls_done: 6, loading_error: null });
    expect(loaded.loaded_at).toEqual(expect.any(String));
    const docs = await call("GET", `/knowledge/${created.body.id}/documents?limit=10`);
    expect(docs.body).toMatchObject({ total: 6, limit: 10, offset: 0 });
    expect(docs.body.documents).toHaveLength(6);
    const stats = await call("GET", `/knowledge/${created.body.id}/stats`);
    expect(stats.body).toMatchObject({ knowledge_source_id: created.body.id, document_count: 6 });
    const found = await call("POST", "/knowledge/search", { query: "glacier", knowledge_source_ids: [created.body.id] });
    expect(found.status).toBe(200);
    expect(found.body.results[0].metadata.url).toBe(`${sites.base}/map/glacier`);
    const event = await until(async () => loadEnd(created.body.id), Boolean, 5000);
    expect(event).toMatchObject({ event: "knowledge_source.loaded", data: { loading_status: "loaded", document_count: 6 } });
    expect(event!.account_id).toEqual(expect.any(Number));
  });

  it("falls back to discovery without a sitemap: each canonical page once, robots.txt honoured", async () => {
    const base = sites.base.replace("127.0.0.1", "localhost");
    const created = await call("POST", "/knowledge", { name: "Crawl", paths: [`${base}/crawl/`] });
    expect(created.body.data_type).toBe("discovery");
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(loaded.loading_status).toBe("loaded");
    const urls = (await call("GET", `/knowledge/${created.body.id}/documents?limit=50`)).body.documents.map((d: { url: string }) => d.url).sort();
    expect(urls).toEqual([`${base}/crawl/`, `${base}/crawl/canyon`, `${base}/crawl/lagoon`, `${base}/crawl/prairie`]);
    expect(sites.hits.get("/crawl/private")).toBeUndefined();
  });

  it("crawls a host whose name has dots (discovery on 127.0.0.1): the crawl state keeps no URL as a key", async () => {
    const created = await call("POST", "/knowledge", { name: "Dotted crawl", data_type: "discovery", paths: [`${sites.base}/crawl/`] });
    expect(created.body.data_type).toBe("discovery");
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(loaded).toMatchObject({ loading_status: "loaded", loading_error: null });
    const urls = (await call("GET", `/knowledge/${created.body.id}/documents?limit=50`)).body.documents.map((d: { url: string }) => d.url).sort();
    expect(urls).toEqual([`${sites.base}/crawl/`, `${sites.base}/crawl/canyon`, `${sites.base}/crawl/lagoon`, `${sites.base}/crawl/prairie`]);
  });

  it("fetches directory-style URLs with their trailing slash and resolves relative links against them", async () => {
    const base = sites.base.replace("127.0.0.1", "localhost");
    const created = await call("POST", "/knowledge", { name: "Dirs", data_type: "discovery", paths: [`${base}/dirs/`] });
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: 2 });
    const urls = (await call("GET", `/knowledge/${created.body.id}/documents?limit=50`)).body.documents.map((d: { url: string }) => d.url).sort();
    expect(urls).toEqual([`${base}/dirs/`, `${base}/dirs/sub/`]);
    expect(sites.hits.get("/dirs")).toBeUndefined();
  });

  it("a crawl whose start page is missing fails naming it", async () => {
    const base = sites.base.replace("127.0.0.1", "localhost");
    const created = await call("POST", "/knowledge", { name: "Nowhere", data_type: "discovery", paths: [`${base}/nowhere/`] });
    const done = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(done.loading_status).toBe("failed");
    expect(done.loading_error).toMatch(/^The crawl indexed no documents; 1 page\(s\) could not be read; last: .*\/nowhere\/ answered HTTP 404/);
  });

  it("with auto_load=false stays unloaded until preloaded; list filters by status", async () => {
    const created = await call("POST", "/knowledge?auto_load=false", { name: "Manual", data_type: "website", paths: [`${sites.base}/map/mesa`] });
    expect(created.body.data_type).toBe("website");
    await new Promise((r) => setTimeout(r, 500));
    expect((await call("GET", `/knowledge/${created.body.id}`)).body.loading_status).toBe("unloaded");
    const unloaded = await call("GET", "/knowledge?status=unloaded");
    expect(unloaded.body.data.map((s: { id: number }) => s.id)).toContain(created.body.id);
    const preload = await call("POST", `/knowledge/${created.body.id}/preload`);
    expect(preload.status).toBe(200);
    expect(preload.body).toMatchObject({ success: true, status: "queued", event_id: expect.any(String), message: expect.any(String), note: expect.any(String) });
    expect((await poll(created.body.id, ["loaded", "failed"])).document_count).toBe(1);
    // Any case, as Python's requests writes a boolean (force=False).
    const skipped = await call("POST", `/knowledge/${created.body.id}/preload?force=False`);
    expect(skipped.body).toMatchObject({ success: false });
    const forced = await call("POST", `/knowledge/${created.body.id}/preload?force=true`);
    expect(forced.body.success).toBe(true);
    expect((await poll(created.body.id, ["loaded"])).loading_status).toBe("loaded");
  });

  it("ends failed with the cause when nothing could be indexed; preload retries a failed source", async () => {
    const created = await call("POST", "/knowledge", { name: "Broken", data_type: "website", paths: [`${sites.base}/broken/a`, `${sites.base}/broken/b`] });
    const failed = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(failed.loading_status).toBe("failed");
    expect(failed.loading_error).toMatch(/500|could not be read/);
    expect(await until(async () => loadEnd(created.body.id), Boolean, 5000)).toMatchObject({ event: "knowledge_source.failed" });
    expect((await call("POST", `/knowledge/${created.body.id}/preload`)).body.success).toBe(true);
    expect((await poll(created.body.id, ["failed"])).loading_error).toEqual(expect.any(String));
  });

  it("ends partial, naming it, when a sitemap of the index could not be read", async () => {
    const created = await call("POST", "/knowledge", { name: "Half index", data_type: "sitemap", paths: [`${sites.base}/idx/sitemap.xml`] });
    const done = await poll(created.body.id, ["loaded", "partial", "failed"], 60_000);
    expect(done).toMatchObject({ loading_status: "partial", document_count: 6 });
    expect(done.loading_error).toMatch(/^1 sitemap file\(s\) could not be read; last: .*\/idx\/missing\.xml answered HTTP 404/);
  });

  it("a listed page that stays missing: partial once, then gone for good and loaded at every load after", async () => {
    const created = await call("POST", "/knowledge", { name: "One dead link", data_type: "website", paths: [`${sites.base}/map/mesa`, `${sites.base}/dead/link`] });
    const statuses: string[] = [];
    for (let load = 0; load < 4; load++) {
      if (load > 0) {
        const before = (await call("GET", `/knowledge/${created.body.id}`)).body.last_refresh?.finished_at;
        expect((await call("POST", `/knowledge/${created.body.id}/preload?force=true`)).status).toBe(200);
        await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).body, (s) => s.last_refresh?.finished_at !== before && ["loaded", "partial", "failed"].includes(s.loading_status), 60_000);
      }
      const done = await poll(created.body.id, ["loaded", "partial", "failed"], 60_000);
      statuses.push(done.loading_status);
      expect(done.document_count).toBe(1);
    }
    expect(statuses).toEqual(["partial", "loaded", "loaded", "loaded"]);
  });

  it("ends partial when some pages failed after others were indexed", async () => {
    const created = await call("POST", "/knowledge", { data_type: "website", paths: [`${sites.base}/map/fjord`, `${sites.base}/broken/x`] });
    const partial = await poll(created.body.id, ["loaded", "partial", "failed"]);
    expect(partial).toMatchObject({ loading_status: "partial", document_count: 1 });
    expect(partial.loading_error).toMatch(/1 page\(s\) could not be read/);
    const event = await until(async () => loadEnd(created.body.id), Boolean, 5000);
    expect(event).toMatchObject({ event: "knowledge_source.partial", data: { loading_status: "partial" } });
  });

  it("runs in windows: a load longer than its budget continues itself until done", async () => {
    const created = await call("POST", "/knowledge", { name: "Slow", data_type: "sitemap", paths: [`${sites.base}/slow/sitemap.xml?n=120`] });
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"], 60_000);
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: 120, loading_urls_done: 120 });
    const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    const job = await conn.collection("load_jobs").findOne({ knowledge_source_id: created.body.id, kind: "load" });
    await conn.close();
    expect(job!.window).toBeGreaterThan(1);
  });

  it("a loader killed mid-window: another loader finishes the load with no lost or duplicated documents", async () => {
    // Stop the in-process loader so the spawned one takes the job, then kill that one mid-window.
    await cluster.brokers[2]!.stop();
    const env = { MONGO_URL: cluster.mongoUrl, NAMESPACE: cluster.namespace, LOAD_WINDOW_SECONDS: "30", LOAD_LEASE_SECONDS: "3" };
    const doomed = spawnServices(["knowledge-loader"], env);
    spawned.push(doomed);
    const created = await call("POST", "/knowledge", { name: "Killed", data_type: "sitemap", paths: [`${sites.base}/slow/sitemap.xml?n=150`] });
    await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).body, (s) => s.loading_urls_done >= 25, 30_000);
    await doomed.kill("SIGKILL");
    const survivor = spawnServices(["knowledge-loader"], env);
    spawned.push(survivor);
    const loaded = await poll(created.body.id, ["loaded", "partial", "failed"], 90_000);
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: 150, loading_urls_done: 150 });
    const docs = await call("GET", `/knowledge/${created.body.id}/documents?limit=200`);
    const urls = docs.body.documents.map((d: { url: string }) => d.url);
    expect(new Set(urls).size).toBe(150);
    expect(docs.body.total).toBe(150);
  });

  it("deletes in the background: 200 with a job id, the source answers until the job is done, then 404", async () => {
    const created = await call("POST", "/knowledge", { data_type: "website", paths: [`${sites.base}/map/delta`] });
    await poll(created.body.id, ["loaded"], 60_000);
    const deleted = await call("DELETE", `/knowledge/${created.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, job_id: expect.any(String), status: "queued" });
    await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).status, (s) => s === 404, 60_000);
    const search = await call("POST", "/knowledge/search", { query: "delta", knowledge_source_ids: [created.body.id] });
    expect(search.body.results).toEqual([]);
  });

  it("a source deleted while it loads: the load stops, and no document outlives the source", async () => {
    const allSlowHits = () => [...sites.hits].filter(([path]) => path.startsWith("/slow/p")).reduce((n, [, hits]) => n + hits, 0);
    const before = allSlowHits();
    const slowHits = () => allSlowHits() - before;
    const created = await call("POST", "/knowledge", { name: "Deleted mid-load", data_type: "sitemap", paths: [`${sites.base}/slow/sitemap.xml?n=400`] });
    // While it loads, the source counts what is searchable already and knows its listing's size.
    const loading = await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).body, (s) => s.loading_urls_done >= 10 && s.document_count > 0, 60_000);
    expect(loading).toMatchObject({ loading_status: "loading", loading_urls_total: 400 });
    const searchable = (await call("GET", `/knowledge/documents?source_id=${created.body.id}&limit=1`)).body.pagination.total;
    expect(searchable).toBeGreaterThanOrEqual(loading.document_count);
    expect((await call("DELETE", `/knowledge/${created.body.id}`)).status).toBe(200);
    await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).status, (s) => s === 404, 60_000);
    // The load notices at its next batch: a batch in flight may end, then fetching stops.
    await new Promise((r) => setTimeout(r, 3000));
    const fetched = slowHits();
    await new Promise((r) => setTimeout(r, 3000));
    expect(slowHits()).toBe(fetched);
    expect(fetched).toBeLessThan(400);
    expect((await call("GET", `/knowledge/documents?source_id=${created.body.id}`)).body.pagination.total).toBe(0);
  });

  it("validates input and isolates accounts", async () => {
    expect((await call("POST", "/knowledge", { name: "No paths" })).status).toBe(422);
    expect((await call("POST", "/knowledge", { paths: ["not a url"] })).status).toBe(422);
    expect((await call("POST", "/knowledge", { paths: [`${sites.base}/x`], data_type: "ftp" })).status).toBe(422);
    // A URL naming no host is refused as webhooks refuse it, wherever it is in the list and on update too.
    const hostless = await call("POST", "/knowledge?auto_load=false", { paths: [`${sites.base}/x`, "http://:3250/"], data_type: "website" });
    expect(hostless.status).toBe(422);
    expect(hostless.body.detail[0]).toMatchObject({ loc: ["body", "paths", 1], msg: expect.stringContaining("must be an absolute http or https URL") });
    expect((await call("GET", "/knowledge?limit=201")).status).toBe(422);
    expect((await call("GET", "/knowledge?status=done")).status).toBe(422);
    const mine = (await call("POST", "/knowledge?auto_load=false", { data_type: "website", paths: [`${sites.base}/map/mesa`] })).body;
    for (const [method, path] of [["GET", ""], ["PUT", ""], ["DELETE", ""], ["POST", "/preload"], ["GET", "/stats"], ["GET", "/documents"]] as const) {
      expect((await call(method, `/knowledge/${mine.id}${path}`, method === "PUT" ? { name: "x" } : undefined, other)).status).toBe(403);
    }
    expect((await call("GET", "/knowledge", undefined, other)).body.data).toEqual([]);
    expect((await call("PUT", `/knowledge/${mine.id}`, { paths: ["http://:3250/"] })).status).toBe(422);
    expect((await call("GET", `/knowledge/${mine.id}`)).body.paths).toEqual([`${sites.base}/map/mesa`]);
    const renamed = await call("PUT", `/knowledge/${mine.id}`, { name: "Renamed", description: "" });
    expect(renamed.body).toMatchObject({ name: "Renamed", description: "127.0.0.1" });
  });
});
