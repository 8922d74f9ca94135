import http from "node:http";
import type { AddressInfo } from "node:net";
import { addressPolicy } from "../../lib/address-policy";
import { HostLimiter } from "../../lib/host-limiter";
import { READERS, createFetcher, resolveDataType, type ReaderDocument, type UrlListState } from "../../services/knowledge-loader/readers";
import { readSitemaps } from "../../services/knowledge-loader/readers/sitemap";
import { SITEMAP_SITE_PAGES, sitemapSiteUrls, startFixtureSite, type FixtureSite } from "../harness/fixture-site";

const CEILING = 10_000;

describe("sitemap sources against a 12,000-page sitemap index", () => {
  let site: FixtureSite;
  let crawlSite: FixtureSite;
  const fetch = createFetcher({ limiter: new HostLimiter(16), backoffBaseMs: 20, policy: addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" }) });

  beforeAll(async () => {
    [site, crawlSite] = await Promise.all([startFixtureSite("sitemap"), startFixtureSite("crawl")]);
  });
  afterAll(async () => {
    await Promise.all([site?.stop(), crawlSite?.stop()]);
  });

  it("keeps only pages on the sitemap's host and port: one on another port of the same host is skipped (sitemaps.org)", async () => {
    let base = "";
    const server = http.createServer((_req, res) => {
      const locs = [`${base}/own-page`, `${crawlSite.baseUrl}/other-port`, "http://127.0.0.1/default-port", `${base.replace("127.0.0.1", "localhost")}/other-host`];
      res.writeHead(200, { "content-type": "application/xml" });
      res.end(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs.map((l) => `<url><loc>${l}</loc></url>`).join("")}</urlset>`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const listing = await readSitemaps([`${base}/sitemap.xml`], fetch);
      expect(listing.urls).toEqual([`${base}/own-page`]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("indexes a listed page only where it arrives on the site and robots.txt allows: a redirect is not an invitation", async () => {
    let base = "";
    const html = (text: string) => `<html><head><title>${text}</title></head><body><p>${text} is here, with enough words to index.</p></body></html>`;
    const server = http.createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const answer = (status: number, type: string, body: string, headers: Record<string, string> = {}) => res.writeHead(status, { "content-type": type, ...headers }).end(body);
      if (path === "/robots.txt") return answer(200, "text/plain", "User-agent: *\nDisallow: /secret\n");
      if (path === "/sitemap.xml") {
        const locs = ["/page", "/to-secret", "/off-site"].map((p) => `<url><loc>${base}${p}</loc></url>`).join("");
        return answer(200, "application/xml", `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
      }
      if (path === "/to-secret") return answer(302, "text/plain", "", { location: "/secret/page" });
      if (path === "/off-site") return answer(302, "text/plain", "", { location: `${crawlSite.baseUrl}/` });
      answer(200, "text/html", html(`Page ${path}`));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const plan = await READERS.sitemap.start([`${base}/sitemap.xml`], { fetch });
      const documents: ReaderDocument[] = [];
      for (let done = false; !done; ) {
        const result = await READERS.sitemap.next(plan.state, { fetch }, 8);
        documents.push(...result.documents);
        done = result.done;
      }
      expect(documents.map((d) => d.url)).toEqual([`${base}/page`]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("resolves auto to sitemap when the site has one and to discovery when it has none", async () => {
    expect(await resolveDataType(site.baseUrl, fetch)).toBe("sitemap");
    expect(await resolveDataType(`${crawlSite.baseUrl}/`, fetch)).toBe("discovery");
    expect(crawlSite.hits("/sitemap.xml") + crawlSite.hits("/sitemap_index.xml")).toBe(2);
  });

  it("lists 12,000 distinct pages from the index (gzip file and gzip transfer included) and keeps the first 10,000 sorted", async () => {
    const listing = await readSitemaps([`${site.baseUrl}/sitemap_index.xml`], fetch);
    const expected = [...sitemapSiteUrls(site.baseUrl)].sort().slice(0, CEILING);
    expect(listing.listed).toBe(SITEMAP_SITE_PAGES);
    expect(listing.skipped).toBe(SITEMAP_SITE_PAGES - CEILING);
    expect(listing.failures).toEqual([]);
    expect(listing.urls).toEqual(expected);
    // Sorting is what decides: blog posts come before docs pages although the sitemaps interleave them.
    expect(listing.urls[0]).toBe(`${site.baseUrl}/blog/post-00001`);
    expect(listing.urls[CEILING - 1]).toBe(`${site.baseUrl}/docs/page-04000`);
  });

  it("reads exactly the first 10,000 pages in sorted order, resumable from persisted state, and reports the ceiling", async () => {
    const plan = await READERS.sitemap.start([site.baseUrl], { fetch });
    expect(plan.total).toBe(CEILING);
    expect(plan.ceiling).toEqual({ listed: SITEMAP_SITE_PAGES, skipped: SITEMAP_SITE_PAGES - CEILING });

    let state = plan.state as UrlListState;
    const documents: ReaderDocument[] = [];
    const started = Date.now();
    for (let batch = 0; ; batch++) {
      const result = await READERS.sitemap.next(state, { fetch }, 64);
      expect(result.failures).toEqual([]);
      documents.push(...result.documents);
      if (result.done) break;
      // A window ends and the next one resumes from what was persisted.
      if (batch === 40) state = JSON.parse(JSON.stringify(state)) as UrlListState;
    }
    const seconds = (Date.now() - started) / 1000;
    console.log(`[readers] sitemap: ${documents.length} pages fetched and extracted in ${seconds.toFixed(1)} s (${Math.round(documents.length / seconds)} pages/s, fixture server in the same process)`);

    expect(documents.map((d) => d.url)).toEqual([...sitemapSiteUrls(site.baseUrl)].sort().slice(0, CEILING));
    for (const doc of [documents[0], documents[5_000], documents[CEILING - 1]]) {
      expect(doc.content).toContain(`fixture-id ${new URL(doc.url).pathname}`);
      expect(doc.content).not.toMatch(/NOISE/);
      expect(doc.title).toMatch(/^(Post|Page) \d{5}$/);
    }
    expect(new Set(documents.map((d) => d.content)).size).toBe(CEILING);
    expect(site.hits("/docs/page-04001") + site.hits("/docs/page-06000")).toBe(0); // skipped pages are never fetched
  }, 180_000); // 10,000 real page fetches: seconds when idle, longer on a busy 2-core machine
});
