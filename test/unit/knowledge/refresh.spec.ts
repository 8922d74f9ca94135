import { classifyPage, pageHash, settleLoad, type PageRecord } from "../../../services/knowledge-loader/registry";
import { nextRefreshAt, refreshPolicy } from "../../../services/knowledge/refresh";
import { loadReport } from "../../../services/knowledge/states";

describe("refresh policy", () => {
  it("takes exactly one of interval_seconds and cron, canonical zone, prune on by default", () => {
    expect(refreshPolicy({ interval_seconds: 3600 })).toEqual({ policy: { interval_seconds: 3600, cron: null, timezone: "UTC", prune: true }, problems: [] });
    expect(refreshPolicy({ cron: " 0  3 * * 1-5 ", timezone: "america/new_york", prune: false }).policy).toEqual({
      interval_seconds: null,
      cron: "0 3 * * 1-5",
      timezone: "America/New_York",
      prune: false,
    });
    expect(refreshPolicy({}).problems[0]).toMatchObject({ field: "refresh" });
    expect(refreshPolicy({ interval_seconds: 60, cron: "* * * * *" }).problems[0]).toMatchObject({ field: "refresh" });
    expect(refreshPolicy({ cron: "@daily" }).problems[0]).toMatchObject({ field: "refresh.cron", type: "cron" });
    expect(refreshPolicy({ cron: "0 3 * * *", timezone: "+01:00" }).problems[0]).toMatchObject({ field: "refresh.timezone" });
  });

  it("next refresh: now + interval, or the next cron occurrence in the zone; none without a policy", () => {
    const now = new Date("2026-03-28T12:00:00Z");
    expect(nextRefreshAt(null, now)).toBeNull();
    expect(nextRefreshAt({ interval_seconds: 600, cron: null, timezone: "UTC", prune: true }, now)).toEqual(new Date("2026-03-28T12:10:00Z"));
    // 03:00 in Berlin on the day after (CET, UTC+1, before the switch to summer time on the 29th).
    expect(nextRefreshAt({ interval_seconds: null, cron: "0 3 * * *", timezone: "Europe/Berlin", prune: true }, now)).toEqual(new Date("2026-03-29T01:00:00Z"));
  });
});

describe("page comparison", () => {
  const doc = { url: "https://e.com/a", title: "A", content: "text" };
  it("is new without an indexed document, unchanged with the same hash and URL, else changed", () => {
    const hash = pageHash(doc);
    expect(classifyPage(undefined, doc, hash)).toBe("new");
    expect(classifyPage({ doc_url: null, content_hash: null }, doc, hash)).toBe("new");
    expect(classifyPage({ doc_url: doc.url, content_hash: hash }, doc, hash)).toBe("unchanged");
    expect(classifyPage({ doc_url: doc.url, content_hash: hash }, doc, pageHash({ ...doc, title: "B" }))).toBe("changed");
    expect(classifyPage({ doc_url: "https://e.com/old", content_hash: hash }, doc, hash)).toBe("changed");
  });
});

describe("load report", () => {
  it("counts from progress, duration from the load's start", () => {
    const report = loadReport(
      { _id: "load_1", trigger: "schedule", created_at: new Date(0) },
      { counts: { changed: 2, unchanged: 5, failed: 1 }, started_at: Date.parse("2026-01-01T00:00:00Z") },
      { status: "partial", removed: 3, now: new Date("2026-01-01T00:00:02Z") },
    );
    expect(report).toEqual({
      job_id: "load_1",
      trigger: "schedule",
      status: "partial",
      started_at: new Date("2026-01-01T00:00:00Z"),
      finished_at: new Date("2026-01-01T00:00:02Z"),
      duration_ms: 2000,
      new: 0,
      changed: 2,
      unchanged: 5,
      removed: 3,
      failed: 1,
    });
  });
});

describe("what a finished load keeps", () => {
  const page = (url: string, fields: Partial<PageRecord> = {}): PageRecord =>
    ({ url, doc_url: url, content_hash: "h", missing: 0, load_id: "old", ...fields }) as PageRecord;
  const entries = [
    page("a"),
    page("b", { missing: 1 }),
    page("c", { missing: 2 }),
    page("d"),
    page("e", { doc_url: null }),
    page("f", { doc_url: "a" }), // a second listed URL of document a, now gone
  ];

  it("after a complete page list: listed pages stay, unlisted and twice-missing ones go", () => {
    const result = settleLoad(entries, { loadId: "now", listed: new Set(["a", "b", "c", "e"]), complete: true });
    expect([...result.keep!].sort()).toEqual(["a", "b"]);
    expect(result.gone.sort()).toEqual(["c", "d"]); // document a stays: a listed page still leads to it
    // c is still listed: it loses its document but stays known with its streak, so its next 404 is no new failure.
    expect({ urls: result.forget.urls.sort(), cleared: result.forget.cleared }).toEqual({ urls: ["d", "f"], cleared: ["c"] });
  });

  it("after an incomplete listing only pages missing twice go; crawls count the pages they marked", () => {
    expect(settleLoad(entries, { loadId: "now", listed: new Set(["a"]), complete: false })).toMatchObject({ keep: null, gone: ["c"], forget: { urls: ["c"], cleared: [] } });
    const marked = entries.map((e) => (e.url === "d" ? { ...e, load_id: "now" } : e));
    const crawl = settleLoad(marked, { loadId: "now", listed: null, complete: true });
    expect([...crawl.keep!]).toEqual(["d"]);
  });
});
