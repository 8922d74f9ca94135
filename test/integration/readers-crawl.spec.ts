import { addressPolicy } from "../../lib/address-policy";
import { HostLimiter } from "../../lib/host-limiter";
import { READERS, createFetcher, type ReaderDocument } from "../../services/knowledge-loader/readers";
import { crawlBatch, createCrawlState, type CrawlState, type CrawledPage } from "../../services/knowledge-loader/readers/crawl";
import { CRAWL_SITE, startFixtureSite, type FixtureSite } from "../harness/fixture-site";

describe("discovery crawl of a site with cycles, duplicates, a canonical link and robots.txt", () => {
  let site: FixtureSite;
  const fetch = createFetcher({ limiter: new HostLimiter(4), backoffBaseMs: 20, policy: addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" }) });
  const pathOf = (url: string) => {
    const u = new URL(url);
    return u.pathname + u.search;
  };

  beforeAll(async () => {
    site = await startFixtureSite("crawl");
  });
  afterAll(() => site?.stop());

  it("yields every canonical page once, follows robots.txt and skips non-HTML, resuming from persisted state", async () => {
    let state: CrawlState = createCrawlState(`${site.baseUrl}/`, { maxDepth: CRAWL_SITE.maxDepth });
    const pages: CrawledPage[] = [];
    for (let batches = 0; batches < 100; batches++) {
      const { pages: batch, failures, done } = await crawlBatch(state, fetch, 3);
      expect(failures).toEqual([]);
      pages.push(...batch);
      if (done) break;
      state = JSON.parse(JSON.stringify(state)) as CrawlState; // every batch boundary is a resumable window boundary
    }

    expect(pages.map((p) => pathOf(p.url)).sort()).toEqual([...CRAWL_SITE.pages].sort());
    expect(pages.find((p) => pathOf(p.url) === "/docs/a")?.title).toBe("Crawl /docs/a");
    for (const page of pages) {
      expect(page.content).toContain(`fixture-id ${new URL(page.url).pathname}`);
      expect(page.content).not.toMatch(/NOISE/);
    }
    for (const path of CRAWL_SITE.neverFetched) expect([path, site.hits(path)]).toEqual([path, 0]);
    // Duplicate spellings (fragment, tracking parameters, parameter order) are collapsed before fetching; only the
    // redirect target is requested twice. A trailing slash names another resource: "/about/" is asked once, and its
    // page, the same as "/about", is one document (by content).
    expect(site.stats["/about/"]).toBe(1);
    expect(Object.keys(site.stats).filter((k) => k.startsWith("/products"))).toEqual(["/products?a=1&b=2"]);
    expect(Object.entries(site.stats).filter(([, n]) => n > 1)).toEqual([["/docs/b", 2]]);
    expect(site.stats["/robots.txt"]).toBe(1);
    expect(state).toMatchObject({ pagesRead: CRAWL_SITE.pages.length, queue: [], failed: 0 });
  });

  it("stops at the page limit and at the depth limit", async () => {
    const limited = createCrawlState(`${site.baseUrl}/`, { maxPages: 3 });
    const pages: CrawledPage[] = [];
    while (true) {
      const { pages: batch, done } = await crawlBatch(limited, fetch, 8);
      pages.push(...batch);
      if (done) break;
    }
    expect(pages).toHaveLength(3);

    const deep4Before = site.hits("/deep/4");
    const shallow = createCrawlState(`${site.baseUrl}/deep/1`, { maxDepth: 2 });
    const deep: string[] = [];
    while (true) {
      const { pages: batch, done } = await crawlBatch(shallow, fetch, 8);
      deep.push(...batch.map((p) => pathOf(p.url)));
      if (done) break;
    }
    expect(deep.filter((p) => p.startsWith("/deep/"))).toEqual(["/deep/1", "/deep/2", "/deep/3"]);
    expect(site.hits("/deep/4")).toBe(deep4Before);
  });

  it("runs through the discovery reader of the registry", async () => {
    const plan = await READERS.discovery.start([site.baseUrl], { fetch, crawlLimits: { maxDepth: CRAWL_SITE.maxDepth } });
    expect(plan.total).toBeNull();
    const documents: ReaderDocument[] = [];
    for (let done = false; !done; ) {
      const batch = await READERS.discovery.next(plan.state, { fetch });
      documents.push(...batch.documents);
      done = batch.done;
    }
    expect(documents.map((d) => pathOf(d.url)).sort()).toEqual([...CRAWL_SITE.pages].sort());
  });

  it("does not crawl a site whose robots.txt is unreachable, and says why", async () => {
    const flaky = await startFixtureSite("flaky");
    try {
      const plan = await READERS.discovery.start([`${flaky.baseUrl}/slow/1`], { fetch });
      await expect(READERS.discovery.next(plan.state, { fetch })).rejects.toThrow(/robots\.txt unreachable: .*HTTP 503/);
      expect(flaky.hits("/slow/")).toBe(0);
    } finally {
      await flaky.stop();
    }
  });
});
