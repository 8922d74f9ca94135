import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { startChangingSite, type ChangingSite } from "../harness/fixture-site";
import { apiClient, signup, type Api } from "../harness/http";
import { until, scaled } from "../harness/wait";

const PAGES = 30;

interface SourceView {
  id: number;
  loading_status: string;
  document_count: number;
  next_refresh_at: string | null;
  last_refresh: { job_id: string; trigger: string; status: string; new: number; changed: number; unchanged: number; removed: number; failed: number; duration_ms: number } | null;
}

describe("knowledge refresh: schedules, incremental re-sync and pruning over a changing site", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let site: ChangingSite;
  let db: mongoose.Connection;
  const events: { event: string; data: SourceView }[] = [];
  const listener = {
    name: "refresh-listener",
    events: {
      "knowledge_source.*"(ctx: { eventName: string; params: { data: SourceView } }) {
        events.push({ event: ctx.eventName, data: ctx.params.data });
      },
    },
  };

  beforeAll(async () => {
    site = await startChangingSite(PAGES);
    cluster = await startCluster({
      database: "knowledge_refresh",
      env: { EMBEDDING_PROVIDER: "none", SCHEDULER_POLL_MS: "200" },
      // Two scheduler replicas: each due refresh must still be queued once.
      nodes: [["gateway"], ["users", "api-keys", "knowledge", "search", "scheduler", "tasks"], ["knowledge-loader", "scheduler"]],
      extraServices: [listener],
    });
    db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "refresh")).token;
  });
  afterAll(async () => {
    await db?.close();
    await cluster?.stop();
    await site?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
  const source = async (id: number) => (await call("GET", `/knowledge/${id}`)).body as SourceView;
  const documentUrls = async (id: number) => {
    const res = await call("GET", `/knowledge/${id}/documents?limit=200`);
    return (res.body.documents as { url: string }[]).map((d) => d.url).sort();
  };
  /** Makes the source's refresh due now, as the clock would, and waits for the load the scheduler queues to end. */
  const refreshNow = async (id: number) => {
    const before = (await source(id)).last_refresh?.job_id;
    await db.collection("knowledge_sources").updateOne({ _id: id as never }, { $set: { next_refresh_at: new Date(Date.now() - 1000) } });
    return until(() => source(id), (s) => Boolean(s.last_refresh && s.last_refresh.job_id !== before && s.loading_status !== "loading"));
  };
  /** A crawl source of the site from its home page, refreshed hourly, once its first load ended. */
  const crawl = async (crawlSite: ChangingSite) => {
    // Crawled as localhost: the crawl state still keys objects by URL, and the local database refuses keys with dots.
    const base = crawlSite.baseUrl.replace("127.0.0.1", "localhost");
    const created = await call("POST", "/knowledge", { paths: [`${base}/`], data_type: "discovery", refresh: { interval_seconds: 3600 } });
    const id = created.body.id as number;
    const first = await until(() => source(id), (s) => s.loading_status === "loaded");
    return { id, base, first };
  };
  const search = async (id: number, query: string) => {
    const res = await call("POST", "/knowledge/search", { query, knowledge_source_ids: [id], limit: 50 });
    return (res.body.results as { content: string; metadata: { url: string } }[]).map((r) => r.content).join("\n");
  };

  it("validates the refresh policy: one of interval or cron, a usable cron and time zone, additive and nullable", async () => {
    const both = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { interval_seconds: 3600, cron: "0 * * * *" } });
    expect(both.status).toBe(422);
    expect(both.body.detail[0]).toMatchObject({ loc: ["body", "refresh"] });
    const badCron = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { cron: "every day" } });
    expect(badCron.status).toBe(422);
    expect(badCron.body.detail[0]).toMatchObject({ loc: ["body", "refresh", "cron"], msg: expect.stringContaining("Invalid cron expression") });
    const badZone = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { cron: "0 3 * * *", timezone: "Mars/Base" } });
    expect(badZone.body.detail[0]).toMatchObject({ loc: ["body", "refresh", "timezone"] });
    const tooOften = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { interval_seconds: 5 } });
    expect(tooOften.status).toBe(422);
    // A cron gets the interval's minimum: firings at most once a minute.
    for (const cron of ["* * * * * *", "*/30 * * * * *"]) {
      const everySecond = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { cron } });
      expect(everySecond.status).toBe(422);
      expect(everySecond.body.detail[0]).toMatchObject({ loc: ["body", "refresh", "cron"], msg: expect.stringMatching(/at most once a minute/) });
    }
    expect((await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap", refresh: { cron: "15 * * * * *" } })).status).toBe(201);

    const plain = await call("POST", "/knowledge?auto_load=false", { paths: [site.baseUrl], data_type: "sitemap" });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({ refresh: null, next_refresh_at: null, last_refresh: null });

    const before = Date.now();
    const cron = await call("PUT", `/knowledge/${plain.body.id}`, { refresh: { cron: "0 3 * * *", timezone: "europe/berlin" } });
    expect(cron.status).toBe(200);
    expect(cron.body.refresh).toEqual({ interval_seconds: null, cron: "0 3 * * *", timezone: "Europe/Berlin", prune: true });
    const next = new Date(cron.body.next_refresh_at);
    expect(next.getTime()).toBeGreaterThan(before);
    expect(next.toLocaleString("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit" })).toBe("03:00");

    const cleared = await call("PUT", `/knowledge/${plain.body.id}`, { refresh: null });
    expect(cleared.body).toMatchObject({ refresh: null, next_refresh_at: null });
    await call("DELETE", `/knowledge/${plain.body.id}`);
  });

  it("refreshes on schedule: changed pages re-indexed, unchanged ones asked conditionally and skipped, removed ones pruned, a 404 kept once", async () => {
    const created = await call("POST", "/knowledge", { paths: [site.baseUrl], data_type: "sitemap", refresh: { interval_seconds: 3600 } });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    const first = await until(() => source(id), (s) => s.loading_status === "loaded");
    expect(first.document_count).toBe(PAGES);
    expect(first.last_refresh).toMatchObject({ trigger: "manual", status: "loaded", new: PAGES, changed: 0, unchanged: 0, removed: 0, failed: 0 });
    expect(new Date(first.next_refresh_at!).getTime()).toBeGreaterThan(Date.now() + 3500_000);
    const firstDocs = (await call("GET", `/knowledge/${id}/documents?limit=200`)).body.documents as { url: string; indexed_at: string }[];
    const indexedAt = new Map(firstDocs.map((d) => [d.url, d.indexed_at]));

    // Between loads: one page of each validator kind changes, two are removed, one answers 404 once (flapping),
    // one answers 404 on both refreshes, one fails transiently (503 on every retry).
    const changed = [3, 4, 5];
    const gone = [6, 7];
    const flapping = 10;
    const dead = 9;
    const transient = 13;
    for (const n of changed) site.change(n);
    for (const n of gone) site.remove(n);
    site.fail(flapping, 404, 1);
    site.fail(dead, 410, 2);
    site.fail(transient, 503, 4);
    site.resetCounts();

    const second = await refreshNow(id);
    expect(second.loading_status).toBe("partial"); // the failed pages are reported
    expect(second.last_refresh).toMatchObject({ trigger: "schedule", new: 0, changed: 3, unchanged: PAGES - 3 - 2 - 3, removed: 2, failed: 3 });
    const listed = PAGES - gone.length;
    // Unchanged pages: lastmod ones are not fetched at all, ETag ones answer 304, the rest are fetched whole.
    const kinds = (kind: string) => site.listed().filter((u) => site.validatorsOf(Number(u.slice(-5))) === kind).map((u) => Number(u.slice(-5)));
    const untouched = (ns: number[]) => ns.filter((n) => ![...changed, flapping, dead, transient].includes(n)).length;
    expect(site.counts.notModified).toBe(untouched(kinds("etag")));
    expect(site.counts.full).toBe(changed.length + untouched(kinds("none")));

    const afterFirstRefresh = await documentUrls(id);
    // The failing pages keep their documents (one failure never deletes); the removed ones are gone.
    expect(afterFirstRefresh).toEqual(site.listed());
    expect(afterFirstRefresh).toHaveLength(listed);
    expect(second.document_count).toBe(listed);
    const docs = (await call("GET", `/knowledge/${id}/documents?limit=200`)).body.documents as { id: string; url: string; indexed_at: string }[];
    for (const d of docs) {
      const n = Number(d.url.slice(-5));
      if (changed.includes(n)) expect(d.indexed_at).not.toBe(indexedAt.get(d.url));
      else expect(d.indexed_at).toBe(indexedAt.get(d.url)); // not re-chunked
    }
    for (const n of changed) {
      const doc = docs.find((d) => d.url === site.urlOf(n))!;
      expect((await call("GET", `/knowledge/documents/${doc.id}`)).body.content).toContain(site.marker(n));
      // The old version's chunks left the index with it.
      expect(await search(id, `page-${n} v1`)).not.toContain(`page-${n} v1`);
    }

    const refreshed = events.filter((e) => e.event === "knowledge_source.refreshed" && e.data.id === id);
    expect(refreshed).toHaveLength(1);
    expect(refreshed[0]!.data.last_refresh).toMatchObject({ changed: 3, removed: 2, failed: 3 });
    const stats = await call("GET", `/knowledge/${id}/stats`);
    expect(stats.body).toMatchObject({ document_count: listed, last_refresh: { job_id: second.last_refresh!.job_id }, next_refresh_at: second.next_refresh_at });

    // Second refresh: the flapping page is back (kept, streak reset), the dead one answered 410 twice in a row.
    const third = await refreshNow(id);
    expect(third.loading_status).toBe("loaded"); // a page pruned as gone is not a failure
    expect(third.last_refresh).toMatchObject({ new: 0, changed: 0, removed: 1, failed: 0, unchanged: listed - 1 });
    expect(await documentUrls(id)).toEqual(site.listed().filter((u) => u !== site.urlOf(dead)));
    expect(third.document_count).toBe(listed - 1);
    const scheduled = await db.collection("load_jobs").countDocuments({ knowledge_source_id: id, trigger: "schedule" });
    expect(scheduled).toBe(2);
  }, scaled(90_000));

  it("refreshes a crawl: a page answering 404 once is kept and holds back pruning, then unlinked pages are pruned", async () => {
    const crawlSite = await startChangingSite(12);
    try {
      const { id, base, first } = await crawl(crawlSite);
      // The home page and the 12 pages it links.
      expect(first.document_count).toBe(13);
      crawlSite.change(2);
      crawlSite.remove(3);
      crawlSite.fail(4, 404, 1);
      const second = await refreshNow(id);
      // The home page reads the same (its links are navigation, not text); page 4's 404 is not a failure of the
      // crawl, but its links were not followed this time, so nothing is pruned for being unlisted.
      expect(second.last_refresh).toMatchObject({ trigger: "schedule", new: 0, changed: 1, removed: 0, failed: 0, unchanged: 10 });
      const expected = [`${base}/`, ...crawlSite.listed().map((u) => u.replace(crawlSite.baseUrl, base))].sort();
      expect(await documentUrls(id)).toEqual([...expected, `${base}/p/00003`].sort());
      const third = await refreshNow(id);
      expect(third.last_refresh).toMatchObject({ new: 0, changed: 0, removed: 1, unchanged: 12 });
      expect(await documentUrls(id)).toEqual(expected);
    } finally {
      await crawlSite.stop();
    }
  }, scaled(60_000));

  it("refreshes a crawl conditionally: a page answering 304 still leads to the pages only it links", async () => {
    // Pages 1-6 are linked from the home page; page n links page n + 6, which nothing else links.
    const crawlSite = await startChangingSite(12, { validators: "etag", children: true });
    try {
      const { id, base, first } = await crawl(crawlSite);
      expect(first.document_count).toBe(13);
      crawlSite.change(2);
      crawlSite.change(8);
      crawlSite.remove(5);
      crawlSite.resetCounts();
      const second = await refreshNow(id);
      // Page 5 left the home page, and page 11 with it (only page 5 linked it): both pruned.
      expect(second.last_refresh).toMatchObject({ new: 0, changed: 2, unchanged: 9, removed: 2, failed: 0 });
      // Only the changed pages were downloaded; the others answered 304, and their kept links led on.
      expect(crawlSite.counts).toEqual({ full: 2, notModified: 8 });
      const gone = new Set([5, 11].map((n) => crawlSite.urlOf(n)));
      const expected = [`${base}/`, ...Array.from({ length: 12 }, (_, i) => crawlSite.urlOf(i + 1)).filter((u) => !gone.has(u)).map((u) => u.replace(crawlSite.baseUrl, base))];
      expect(await documentUrls(id)).toEqual(expected.sort());
      // A third refresh changes nothing: every page but the home page answers 304.
      crawlSite.resetCounts();
      const third = await refreshNow(id);
      expect(third.last_refresh).toMatchObject({ new: 0, changed: 0, unchanged: 11, removed: 0, failed: 0 });
      expect(crawlSite.counts).toEqual({ full: 0, notModified: 10 });
      expect(await documentUrls(id)).toEqual(expected.sort());
    } finally {
      await crawlSite.stop();
    }
  }, scaled(60_000));

  it("prunes documents the page registry does not know (loaded before it existed) from the index's own list", async () => {
    const legacySite = await startChangingSite(9);
    try {
      const created = await call("POST", "/knowledge", { paths: [legacySite.baseUrl], data_type: "sitemap", refresh: { interval_seconds: 3600 } });
      const id = created.body.id as number;
      await until(() => source(id), (s) => s.loading_status === "loaded");
      await db.collection("knowledge_pages").deleteMany({ source_id: id });
      legacySite.remove(5);
      const refreshed = await refreshNow(id);
      expect(refreshed.last_refresh).toMatchObject({ new: 8, removed: 1, failed: 0 });
      expect(await documentUrls(id)).toEqual(legacySite.listed());
    } finally {
      await legacySite.stop();
    }
  }, scaled(60_000));

  it("a manual preload keeps working: force re-reads every page unconditionally and reports it unchanged", async () => {
    const created = await call("POST", "/knowledge", { paths: [site.baseUrl], data_type: "sitemap" });
    const id = created.body.id as number;
    await until(() => source(id), (s) => s.loading_status === "loaded");
    site.resetCounts();
    const preload = await call("POST", `/knowledge/${id}/preload`);
    expect(preload.body).toMatchObject({ success: true, status: "queued" });
    const reloaded = await until(() => source(id), (s) => s.last_refresh?.job_id === preload.body.event_id && s.loading_status !== "loading");
    expect(site.counts.notModified).toBe(0);
    expect(reloaded.last_refresh).toMatchObject({ trigger: "manual", new: 0, changed: 0, removed: 0 });
    expect(reloaded.document_count).toBe(site.listed().length);
    expect(reloaded.next_refresh_at).toBeNull();
  }, scaled(60_000));
});
