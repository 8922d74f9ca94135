import { isAllowed, parseRobots } from "../../../services/knowledge-loader/readers/robots";

const allowed = (robotsTxt: string, path: string) => isAllowed(parseRobots(robotsTxt), `https://example.com${path}`);

describe("parseRobots and isAllowed", () => {
  it("uses our own group over *, matching the product token case-insensitively", () => {
    const txt = "User-agent: *\nDisallow: /\n\nUser-agent: agentplatformbot/2.1\nDisallow: /private\n";
    expect(allowed(txt, "/docs")).toBe(true);
    expect(allowed(txt, "/private/x")).toBe(false);
  });

  it("falls back to the * group and merges every group that names us", () => {
    expect(allowed("User-agent: OtherBot\nDisallow: /\n\nUser-agent: *\nDisallow: /tmp\n", "/tmp/a")).toBe(false);
    expect(allowed("User-agent: OtherBot\nDisallow: /\n\nUser-agent: *\nDisallow: /tmp\n", "/docs")).toBe(true);
    const split = "User-agent: AgentPlatformBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /c\n\nUser-agent: AgentPlatformBot\nDisallow: /b\n";
    expect([allowed(split, "/a"), allowed(split, "/b"), allowed(split, "/c")]).toEqual([false, false, true]);
  });

  it("lets consecutive user-agent lines share a group, and an empty Disallow allow everything", () => {
    const txt = "User-agent: Foo\nUser-agent: AgentPlatformBot\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n";
    expect(allowed(txt, "/x")).toBe(false);
    expect(allowed(txt, "/y")).toBe(true);
    expect(allowed("User-agent: AgentPlatformBot\nDisallow:\n\nUser-agent: *\nDisallow: /\n", "/anything")).toBe(true);
  });

  it("picks the longest match, Allow winning ties", () => {
    const txt = "User-agent: *\nDisallow: /shop\nAllow: /shop/public\nAllow: /page\nDisallow: /page\n";
    expect(allowed(txt, "/shop/cart")).toBe(false);
    expect(allowed(txt, "/shop/public/item")).toBe(true);
    expect(allowed(txt, "/page")).toBe(true);
  });

  it("supports * wildcards and the $ end anchor, against path and query", () => {
    const txt = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?session=\nDisallow: /search*results\n";
    expect(allowed(txt, "/files/a.pdf")).toBe(false);
    expect(allowed(txt, "/files/a.pdf?download=1")).toBe(true);
    expect(allowed(txt, "/list?session=42")).toBe(false);
    expect(allowed(txt, "/search/all/results")).toBe(false);
    expect(allowed(txt, "/searching")).toBe(true);
  });

  it("matches non-ASCII patterns against percent-encoded URLs, and ignores comments and junk", () => {
    const txt = "# comment\nUser-agent: * # everyone\nDisallow: /café  # accents\nnonsense line\nCrawl-delay: 5\n";
    expect(allowed(txt, "/caf%c3%a9/menu")).toBe(false);
    expect(allowed(txt, "/cafe")).toBe(true);
  });

  it("always allows /robots.txt and allows everything without rules", () => {
    expect(allowed("User-agent: *\nDisallow: /\n", "/robots.txt")).toBe(true);
    expect(allowed("", "/x")).toBe(true);
  });

  it("collects Sitemap lines from anywhere in the file", () => {
    const robots = parseRobots("Sitemap: https://example.com/a.xml\nUser-agent: *\nDisallow: /x\nsitemap: https://example.com/b.xml.gz\n");
    expect(robots.sitemaps).toEqual(["https://example.com/a.xml", "https://example.com/b.xml.gz"]);
  });
});
