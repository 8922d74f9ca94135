import { loadOutcome, loadStarted, preloadDecision, rechunkNeeded } from "../../../services/knowledge/states";
import { derivedLabel, typeFromExtension } from "../../../services/knowledge/rules";
import { secretBox } from "../../../lib/secrets";

describe("knowledge source states", () => {
  const now = new Date("2026-01-01T00:00:00Z");

  it("a first window clears the previous error and counters; later windows only keep loading", () => {
    expect(loadStarted(true)).toEqual({ loading_status: "loading", loading_error: null, loading_urls_done: 0, loading_urls_total: null });
    expect(loadStarted(false)).toEqual({ loading_status: "loading" });
  });

  it("ends loaded when every page was read, partial when something was indexed, failed when nothing was", () => {
    expect(loadOutcome({ complete: true, documentCount: 3, error: null, now })).toEqual({ loading_status: "loaded", loaded_at: now, loading_error: null });
    expect(loadOutcome({ complete: false, documentCount: 3, error: "out of windows", now })).toEqual({ loading_status: "partial", loading_error: "out of windows" });
    expect(loadOutcome({ complete: false, documentCount: 0, error: "HTTP 500", now })).toEqual({ loading_status: "failed", loading_error: "HTTP 500" });
    expect(loadOutcome({ complete: true, documentCount: 0, error: "crawl indexed no documents", now }).loading_status).toBe("failed");
  });

  it("a sitemap over the ceiling ends partial even when all allowed pages were read", () => {
    const message = "sitemap page ceiling reached: 10000 of 12000 listed pages read, 2000 skipped (ceiling 10000)";
    expect(loadOutcome({ complete: true, documentCount: 10_000, error: message, now }).loading_status).toBe("partial");
  });

  it("preload retries partial and failed sources, reloads loaded ones only with force", () => {
    expect(preloadDecision({ loading_status: "partial" }, false)).toBe("queue");
    expect(preloadDecision({ loading_status: "failed" }, false)).toBe("queue");
    expect(preloadDecision({ loading_status: "unloaded" }, false)).toBe("queue");
    expect(preloadDecision({ loading_status: "loaded" }, false)).toBe("already-loaded");
    expect(preloadDecision({ loading_status: "loaded" }, true)).toBe("queue");
    expect(preloadDecision({ loading_status: "loading" }, true)).toBe("already-loading");
  });
});

describe("knowledge source rules", () => {
  it("derives labels from the hostname and types from extensions", () => {
    expect(derivedLabel(["https://docs.example.com/guide"])).toBe("docs.example.com");
    expect(typeFromExtension("https://x.io/a/b.PDF")).toBe("pdf");
    expect(typeFromExtension("https://x.io/readme.md")).toBe("markdown");
    expect(typeFromExtension("https://x.io/notes.txt")).toBe("text");
    expect(typeFromExtension("https://x.io/")).toBeNull();
  });

  it("seals credentials so they can be opened only unchanged", () => {
    const box = secretBox("a test key's material");
    const sealed = box.seal("wiki-token-123");
    expect(sealed).not.toContain("wiki-token-123");
    expect(box.open(sealed)).toBe("wiki-token-123");
    const tampered = sealed.slice(0, -2) + (sealed.endsWith("A") ? "BB" : "AA");
    expect(() => box.open(tampered)).toThrow();
  });
});

describe("re-chunking after a chunking update", () => {
  const deployment = { chunkSize: 1000, chunkOverlap: 100 };
  const own = { size: 500, overlap: 50, strategy: "sentence" as const };

  it("re-chunks when the settings in effect change, the deployment's standing in for none", () => {
    expect(rechunkNeeded(null, own, null, deployment)).toBe(true);
    expect(rechunkNeeded(own, { ...own, strategy: "heading" }, "done", deployment)).toBe(true);
    expect(rechunkNeeded(own, null, "done", deployment)).toBe(true);
    // Settings equal to the deployment's default change nothing that is cut.
    expect(rechunkNeeded(null, { size: 1000, overlap: 100, strategy: "fixed" }, null, deployment)).toBe(false);
    expect(rechunkNeeded(own, { ...own }, "done", deployment)).toBe(false);
  });

  it("giving the same settings again retries a failed re-chunk", () => {
    expect(rechunkNeeded(own, { ...own }, "failed", deployment)).toBe(true);
  });
});
