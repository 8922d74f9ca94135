import { looksLikeSitemap, pageCeilingMessage, parseSitemap } from "../../../services/knowledge-loader/readers/sitemap";

describe("parseSitemap", () => {
  it("lists the pages of a urlset, decoding entities and CDATA, ignoring image:loc, with the lastmod of those that give one", () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
      <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
        <url><loc>https://example.com/a?x=1&amp;y=2</loc><lastmod>2026-01-01</lastmod></url>
        <url><loc>
          https://example.com/b
        </loc><image:image><image:loc>https://example.com/b.png</image:loc></image:image></url>
        <url><loc><![CDATA[https://example.com/c?q=a&b]]></loc></url>
        <url><loc>https://example.com/caf&#233;</loc></url>
      </urlset>`;
    expect(parseSitemap(xml)).toEqual({
      kind: "urlset",
      locs: ["https://example.com/a?x=1&y=2", "https://example.com/b", "https://example.com/c?q=a&b", "https://example.com/café"],
      lastmods: { "https://example.com/a?x=1&y=2": "2026-01-01" },
    });
  });

  it("recognises a sitemap index", () => {
    const xml = `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://e.com/s1.xml</loc></sitemap><sitemap><loc>https://e.com/s2.xml.gz</loc></sitemap></sitemapindex>`;
    expect(parseSitemap(xml)).toEqual({ kind: "index", locs: ["https://e.com/s1.xml", "https://e.com/s2.xml.gz"] });
  });

  it("reads a plain-text sitemap and finds nothing in an HTML page", () => {
    expect(parseSitemap("https://e.com/a\n\nhttps://e.com/b\nnot a url\n").locs).toEqual(["https://e.com/a", "https://e.com/b"]);
    expect(parseSitemap("<html><body>Not found</body></html>").locs).toEqual([]);
  });

  it("tells sitemap files from sites, and words the ceiling for loading_error", () => {
    expect(["https://e.com/sitemap.xml", "https://e.com/s/part-1.xml.gz", "https://e.com/x.gz"].every(looksLikeSitemap)).toBe(true);
    expect(looksLikeSitemap("https://e.com/docs")).toBe(false);
    expect(pageCeilingMessage(9_990, 12_000, 2_000, 10_000)).toBe("sitemap page ceiling reached: 9990 of 12000 listed pages read, 2000 skipped (ceiling 10000)");
  });
});
