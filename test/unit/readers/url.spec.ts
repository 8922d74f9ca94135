import { canonicalUrl, looksNonHtml } from "../../../services/knowledge-loader/readers/url";

describe("canonicalUrl", () => {
  it("gives every spelling of a page the same URL", () => {
    const spellings = [
      "https://Example.COM/docs/intro",
      "https://example.com/docs/intro#section-2",
      "https://example.com:443/docs/intro",
      "https://user:pw@example.com/docs/intro",
      "https://example.com/docs/intro?utm_source=news&utm_medium=email",
      "https://example.com./docs/intro?gclid=abc",
    ];
    expect(new Set(spellings.map((s) => canonicalUrl(s)))).toEqual(new Set(["https://example.com/docs/intro"]));
  });

  it("sorts the remaining query parameters and keeps the root slash", () => {
    expect(canonicalUrl("http://example.com/p?b=2&a=1&utm_campaign=x")).toBe("http://example.com/p?a=1&b=2");
    expect(canonicalUrl("http://example.com")).toBe("http://example.com/");
    expect(canonicalUrl("http://example.com/?")).toBe("http://example.com/");
  });

  it("keeps a trailing slash, which names another resource and is the base of relative links", () => {
    expect(canonicalUrl("https://example.com/docs/intro/")).toBe("https://example.com/docs/intro/");
    expect(canonicalUrl("sub/", "https://example.com/start/")).toBe("https://example.com/start/sub/");
  });

  it("resolves relative links and refuses non-web URLs", () => {
    expect(canonicalUrl("../b/", "https://example.com/a/c/")).toBe("https://example.com/a/b/");
    for (const bad of ["mailto:a@b.c", "javascript:void(0)", "ftp://example.com/x", "file:///etc/passwd", "not a url"]) {
      expect(canonicalUrl(bad)).toBeUndefined();
    }
  });
});

describe("looksNonHtml", () => {
  it("skips downloads and assets by extension, not pages", () => {
    expect(["/a.pdf", "/b.PNG", "/c/d.zip", "/style.css", "/feed.xml"].every((p) => looksNonHtml(`https://e.com${p}`))).toBe(true);
    expect(["/", "/docs", "/page.html", "/page.php", "/v1.2/guide", "/a.pdf/view"].some((p) => looksNonHtml(`https://e.com${p}`))).toBe(false);
  });
});
