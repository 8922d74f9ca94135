import { extractHtml } from "../../../services/knowledge-loader/readers/html";
import { fixturePage } from "../../harness/fixture-site";

describe("extractHtml", () => {
  it("keeps the main content and drops nav, header, footer, aside, script and style", () => {
    const page = fixturePage({ title: "Billing guide", seed: 3, paragraphs: 3, links: ["/a"], marker: "MAIN-MARKER" });
    const result = extractHtml(page, "https://docs.example.com/billing");
    expect(result.title).toBe("Billing guide");
    expect(result.content).toContain("MAIN-MARKER");
    expect(result.content.startsWith("Billing guide")).toBe(true);
    expect(result.content).not.toMatch(/NOISE|window\.analytics|font-family/);
  });

  it("marks where each h1-h6 begins in the text, for the heading chunking", () => {
    const html = "<main><h1>Guide</h1><p>Intro.</p><h2>Install <em>it</em></h2><p>Run it.</p><section><h3></h3><p>After an empty heading.</p></section></main>";
    const { content, sections } = extractHtml(html, "https://e.com/");
    expect(content).toBe("Guide\n\nIntro.\n\nInstall it\n\nRun it.\n\nAfter an empty heading.");
    // The first heading opens the text (offset 0 is no boundary); an empty heading marks the text that follows.
    expect(sections.map((at) => content.slice(at).split("\n")[0])).toEqual(["Install it", "After an empty heading."]);
  });

  it("falls back to the body without chrome when nothing marks the content", () => {
    const html = `<html><head><title> Plain  page </title><style>p{}</style></head><body>
      <header>SITE HEADER</header><nav><a href="/x">Menu</a></nav>
      <div><p>First   paragraph
      spans lines.</p><p>Second <b>bold</b> paragraph.</p><ul><li>one</li><li>two</li></ul></div>
      <div role="navigation">ROLE NAV</div><div hidden>HIDDEN</div><div aria-hidden="true">ARIA</div>
      <form><input value="x"><label>FORM LABEL</label></form><footer>SITE FOOTER</footer><script>var x = 1;</script></body></html>`;
    const result = extractHtml(html, "https://example.com/");
    expect(result.title).toBe("Plain page");
    expect(result.content).toBe("First paragraph spans lines.\n\nSecond bold paragraph.\n\none\ntwo");
  });

  it("keeps an article's own header inside <main>", () => {
    const html = `<html><body><header>SITE</header><main><header><h1>Release 2.0</h1><p>by Ops</p></header><p>Body text.</p></main></body></html>`;
    expect(extractHtml(html, "https://example.com/r").content).toBe("Release 2.0\n\nby Ops\n\nBody text.");
  });

  it("prefers a lone <article> and [role=main]", () => {
    expect(extractHtml(`<html><body><div>Chrome</div><article><p>Story</p></article></body></html>`, "https://e.com/").content).toBe("Story");
    expect(extractHtml(`<html><body><div>Chrome</div><div role="main"><p>Main</p></div></body></html>`, "https://e.com/").content).toBe("Main");
  });

  it("resolves links against <base>, drops fragments, non-http schemes, nofollow and duplicates", () => {
    const html = `<html><head><base href="https://example.com/docs/"></head><body>
      <a href="intro#top">i</a><a href="intro">i</a><a href="/root">r</a><a href="mailto:a@b.c">m</a>
      <a href="javascript:void(0)">j</a><a href="https://other.org/x">o</a><a rel="nofollow" href="/nf">n</a><a>no href</a></body></html>`;
    expect(extractHtml(html, "https://example.com/somewhere").links).toEqual([
      "https://example.com/docs/intro",
      "https://example.com/root",
      "https://other.org/x",
    ]);
  });

  it("reports the canonical link and meta robots wishes", () => {
    const html = `<html><head><link rel="alternate" href="/fr"><link rel="Canonical" href="/page"><meta name="robots" content="NOINDEX, follow"></head><body><p>x</p></body></html>`;
    const result = extractHtml(html, "https://example.com/page?ref=1");
    expect(result.canonical).toBe("https://example.com/page");
    expect(result.noindex).toBe(true);
    expect(result.nofollow).toBe(false);
  });

  it("takes the title from og:title or the first h1 when <title> is missing, else the URL", () => {
    expect(extractHtml(`<html><head><meta property="og:title" content="OG"></head><body><h1>H</h1></body></html>`, "https://e.com/").title).toBe("OG");
    expect(extractHtml(`<html><body><h1> Heading  one </h1></body></html>`, "https://e.com/").title).toBe("Heading one");
    expect(extractHtml(`<p>fragment only</p>`, "https://e.com/f").title).toBe("https://e.com/f");
  });

  it("handles fragments and wiki storage markup, dropping macro parameters", () => {
    const storage = `<h1>Runbook</h1><ac:structured-macro ac:name="info"><ac:parameter ac:name="title">PARAM</ac:parameter><ac:rich-text-body><p>Inside macro</p></ac:rich-text-body></ac:structured-macro>`;
    expect(extractHtml(storage, "https://wiki.example.com/x").content).toBe("Runbook\n\nInside macro");
  });

  it("does not overflow on deeply nested markup", () => {
    const depth = 20_000;
    const html = `<html><body>${"<div>".repeat(depth)}deep${"</div>".repeat(depth)}</body></html>`;
    expect(extractHtml(html, "https://e.com/").content).toBe("deep");
  });
});

describe("what a page says of itself", () => {
  it("reads language, description, keywords and author from <html lang> and <meta>, Open Graph as the fallback", () => {
    const page = `<html lang="de-CH"><head><title>Zoll</title>
      <meta name="Description" content="  Wie der   Zoll arbeitet ">
      <meta name="keywords" content="zoll, grenze"><meta name="author" content="Amt">
      <meta property="og:description" content="ignored: the plain description comes first">
      <meta property="og:locale" content="fr_CH"></head><body><p>Text</p></body></html>`;
    expect(extractHtml(page, "https://example.ch/zoll").attributes).toEqual({ language: "de-CH", description: "Wie der Zoll arbeitet", keywords: "zoll, grenze", author: "Amt" });
  });

  it("falls back to content-language and og:locale, og:description; says nothing it did not find; bounds each value", () => {
    const og = `<html><head><meta property="og:locale" content="en_GB"><meta property="og:description" content="${"d".repeat(900)}"></head><body>x</body></html>`;
    expect(extractHtml(og, "https://example.com/").attributes).toEqual({ language: "en_GB", description: "d".repeat(500) });
    const header = `<html><head><meta http-equiv="Content-Language" content="nl"></head><body>x</body></html>`;
    expect(extractHtml(header, "https://example.com/").attributes).toEqual({ language: "nl" });
    expect(extractHtml("<p>bare</p>", "https://example.com/").attributes).toEqual({});
  });
});
