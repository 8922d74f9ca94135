import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ServiceBroker } from "moleculer";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS } from "../../lib/search/models";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { CORPUS, KEYWORD_QUERIES, PARAPHRASE_QUERIES } from "../contract/corpus";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { until, scaled } from "../harness/wait";

/** Pages of the site: the contract corpus (for ranking checks) and filler pages, each served slowly. */
const FILLER_PAGES = 110;
const PAGE_DELAY_MS = 200;
/** A child process transpiles the services and loads the embedding model: slow on a busy machine. */
const SPAWN_TIMEOUT_MS = 150_000;

function page(title: string, body: string) {
  return `<html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${body}</p></main></body></html>`;
}

/** A site on 127.0.0.1 with a sitemap of the corpus pages and the filler pages. */
function startSite(): Promise<{ base: string; stop(): Promise<void> }> {
  const pages = new Map<string, { title: string; body: string }>();
  for (const d of CORPUS) pages.set(`/site/${d.key}`, { title: d.title, body: d.content });
  // Numbered from 100, so no filler page matches the numbers in the corpus queries ("42 km").
  for (let i = 100; i < 100 + FILLER_PAGES; i++) {
    pages.set(`/site/entry-${i}`, { title: `Catalogue entry ${i}`, body: `Catalogue entry ${i}: sku ${7000 + i}, shelf ${i % 12}, colour ${["red", "teal", "amber"][i % 3]}.` });
  }
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const host = `http://${req.headers.host}`;
    if (path === "/robots.txt") return res.writeHead(200, { "content-type": "text/plain" }).end(`User-agent: *\nSitemap: ${host}/site/sitemap.xml\n`);
    if (path === "/site/sitemap.xml") {
      const locs = [...pages.keys()].map((p) => `<url><loc>${host}${p}</loc></url>`).join("");
      return res.writeHead(200, { "content-type": "application/xml" }).end(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
    }
    const p = pages.get(path);
    setTimeout(() => (p ? res.writeHead(200, { "content-type": "text/html" }).end(page(p.title, p.body)) : res.writeHead(404).end()), PAGE_DELAY_MS);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stop: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

/**
 * The platform over NATS on Typesense (the test run's typesense-server): two search replicas (one in this
 * process, one a killable child process) and two loaders load a site; one search replica is killed mid-load.
 */
describe("cluster on Typesense: two search replicas, two loaders", () => {
  const collection = `cluster_${randomBytes(4).toString("hex")}`;
  const settings = {
    SEARCH_ENGINE: "typesense",
    TYPESENSE_URL: process.env.TEST_TYPESENSE_URL!,
    TYPESENSE_API_KEY: process.env.TEST_TYPESENSE_API_KEY ?? "",
    TYPESENSE_COLLECTION: collection,
    // Empty: the bundled local model, whatever the shell running the tests sets.
    EMBEDDING_PROVIDER: "",
  };
  let cluster: Cluster;
  let broker: ServiceBroker;
  let api: Api;
  let site: Awaited<ReturnType<typeof startSite>>;
  let failingEmbeddings: http.Server;
  let owner: { token: string; accountId: number };
  const spawned: ServiceProcess[] = [];
  const childEnv = () => ({ ...settings, MONGO_URL: cluster.mongoUrl, NAMESPACE: cluster.namespace });
  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token: owner.token, body });

  /** Node ids of the available replicas of a service. */
  async function nodesRunning(service: string): Promise<string[]> {
    const nodes = await broker.call<{ id: string; services?: { name: string }[] }[], object>("$node.list", { onlyAvailable: true, withServices: true });
    return nodes.filter((n) => n.services?.some((s) => s.name === service)).map((n) => n.id).sort();
  }

  /** Waits for `count` replicas of a service; a timeout shows what the child processes printed. */
  async function replicas(service: string, count: number): Promise<string[]> {
    try {
      return await until(() => nodesRunning(service), (n) => n.length === count, SPAWN_TIMEOUT_MS, `${count} ${service} replicas`);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${spawned.map((p) => p.output().slice(-2000)).join("\n---\n")}`);
    }
  }

  /** One search answered by one named replica. */
  const searchOn = (nodeID: string, query: string, mode: string) =>
    broker.call<{ results: { url: string; score: number }[]; mode_used: string; total: number }, object>(
      "search.searchDocuments", { accountId: owner.accountId, query, mode, limit: 20 }, { nodeID },
    );

  beforeAll(async () => {
    site = await startSite();
    cluster = await startCluster({
      database: "typesense-cluster",
      env: settings,
      nodes: [["gateway"], ["users", "api-keys", "knowledge"], ["search"]],
    });
    broker = cluster.brokers[0]!;
    api = apiClient(cluster.baseUrl);
    const a = await signup(api, "typesense-cluster");
    owner = { token: a.token, accountId: a.user.account_id };
    // The replica to be killed embeds through an endpoint that always fails, so it dies holding a backlog of
    // queued embeddings (same model name and dimensions as the bundled model) that only a takeover completes.
    failingEmbeddings = http.createServer((_req, res) => res.writeHead(503).end());
    await new Promise<void>((r) => failingEmbeddings.listen(0, "127.0.0.1", r));
    const embeddingUrl = `http://127.0.0.1:${(failingEmbeddings.address() as AddressInfo).port}`;
    spawned.push(
      spawnServices(["search"], {
        ...childEnv(),
        EMBEDDING_PROVIDER: "openai",
        EMBEDDING_URL: embeddingUrl,
        EMBEDDING_MODEL: DEFAULT_LOCAL_MODEL,
        EMBEDDING_DIMENSIONS: String(LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dimensions),
      }),
    );
    // Two loaders in processes of their own, indexing in batches of 10 pages: many index calls, spread over
    // both search replicas, before and after the kill.
    for (let i = 0; i < 2; i++) spawned.push(spawnServices(["knowledge-loader"], { ...childEnv(), LOAD_BATCH_SIZE: "10" }));
    await replicas("search", 2);
    await replicas("knowledge-loader", 2);
  }, 2 * SPAWN_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    await Promise.all(spawned.map((p) => p.kill()));
    await cluster?.stop();
    await site?.stop();
    await new Promise((r) => failingEmbeddings?.close(r));
    await new TypesenseEngine({ url: settings.TYPESENSE_URL, apiKey: settings.TYPESENSE_API_KEY, collection, dimensions: LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dimensions }).dropCollection();
  });

  it("loads a site with no lost or duplicated page while a search replica is killed mid-load", async () => {
    const created = await call("POST", "/knowledge", { name: "Site", data_type: "sitemap", paths: [`${site.base}/site/sitemap.xml`] });
    expect(created.status).toBe(201);
    const total = CORPUS.length + FILLER_PAGES;
    await until(async () => (await call("GET", `/knowledge/${created.body.id}`)).body, (s) => s.loading_urls_done >= 50, 60_000, "first batches");
    await spawned[0]!.kill("SIGKILL");
    const loaded = await until(
      async () => (await call("GET", `/knowledge/${created.body.id}`)).body,
      (s) => ["loaded", "partial", "failed"].includes(s.loading_status),
      120_000,
      "load finished",
    );
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: total, loading_urls_done: total, loading_error: null });
    const docs = await call("GET", `/knowledge/${created.body.id}/documents?limit=200`);
    expect(docs.body.total).toBe(total);
    expect(new Set(docs.body.documents.map((d: { url: string }) => d.url)).size).toBe(total);
    // Embeddings the killed replica had queued are taken over by the survivor.
    const stats = await until(async () => (await call("GET", "/knowledge/documents/stats")).body, (s) => s.index_status === "ready", 120_000, "all chunks embedded");
    expect(stats).toMatchObject({ engine: "typesense", total_documents: total, embedded_chunks: stats.total_chunks });
  }, scaled(240_000));

  it("searches the site in all three modes", async () => {
    const keyOf = (url: string) => url.split("/").pop();
    for (const { query, relevant } of PARAPHRASE_QUERIES) {
      for (const mode of ["semantic", "hybrid"]) {
        const res = await call("POST", "/knowledge/documents/search", { query, mode });
        expect({ query, mode, mode_used: res.body.mode_used, first: keyOf(res.body.results[0].url) }).toEqual({ query, mode, mode_used: mode, first: relevant });
      }
    }
    for (const { query, relevant } of KEYWORD_QUERIES) {
      const res = await call("POST", "/knowledge/documents/search", { query, mode: "keyword" });
      expect({ query, mode_used: res.body.mode_used, first: keyOf(res.body.results[0].url) }).toEqual({ query, mode_used: "keyword", first: relevant });
    }
    const entries = await call("POST", "/knowledge/documents/search", { query: "catalogue entry teal", mode: "keyword", limit: 100 });
    expect(entries.body.total).toBe(FILLER_PAGES);
  });

  it("gives identical results whichever replica answers, a replica started after the load included", async () => {
    spawned.push(spawnServices(["search"], childEnv()));
    const [a, b] = await replicas("search", 2);
    const queries = [...PARAPHRASE_QUERIES, ...KEYWORD_QUERIES].map((q) => q.query).concat("catalogue entry 117 amber");
    let answered = 0;
    for (const mode of ["keyword", "semantic", "hybrid"]) {
      for (const query of queries) {
        const [fromA, fromB] = await Promise.all([searchOn(a!, query, mode), searchOn(b!, query, mode)]);
        if (fromA.results.length) answered++;
        expect({ query, mode, ...fromB }).toEqual({ query, mode, ...fromA });
      }
    }
    // Paraphrases share no word with their page, so some keyword searches rightly find nothing.
    expect(answered).toBeGreaterThan(2 * queries.length);
  }, SPAWN_TIMEOUT_MS + 60_000);
});
