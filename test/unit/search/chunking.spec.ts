import { chunkContent, chunkingSettings, chunkText, headingStarts, sentenceSpans, type ChunkingSettings } from "../../../lib/search/chunking";

const sentences = (n: number) => Array.from({ length: n }, (_, i) => `Sentence ${i} says ${"word ".repeat(i % 7)}something.`).join(" ");

/** Every chunk's range in the content as given holds its text (whitespace runs aside). */
function expectRanges(content: string, settings: ChunkingSettings) {
  const chunks = chunkContent(content, settings);
  for (const c of chunks) expect(content.slice(c.docStart, c.docEnd).replace(/\s+/g, " ")).toBe(c.text.replace(/\s+/g, " "));
  expect(chunks.map((c) => c.position)).toEqual(chunks.map((_, i) => i));
  return chunks;
}

describe("chunking strategies", () => {
  it("fixed is the chunking every source had before per-source settings (same chunks, same ranges)", () => {
    const text = sentences(80);
    expect(chunkContent(text, { size: 300, overlap: 60, strategy: "fixed" })).toEqual(chunkText(text, 300, 60));
  });

  it("sentence packs whole sentences up to the size and repeats the last ones that fit in the overlap", () => {
    const text = sentences(60);
    const chunks = expectRanges(text, { size: 300, overlap: 80, strategy: "sentence" });
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(300);
      expect(c.text).toMatch(/^Sentence \d+ /);
      expect(c.text).toMatch(/something\.$/);
    }
    // A chunk repeats whole sentences of the previous one, at most 80 characters of them, or starts after it.
    let repeated = 0;
    for (let i = 1; i < chunks.length; i++) {
      const [prev, next] = [chunks[i - 1]!, chunks[i]!];
      if (next.start >= prev.end) continue;
      repeated++;
      expect(prev.end - next.start).toBeLessThanOrEqual(80);
      expect(prev.text.endsWith(text.slice(next.start, prev.end))).toBe(true);
    }
    expect(repeated).toBeGreaterThan(0);
    // Without overlap, sentences are never repeated: the chunks tile the text.
    const tiles = chunkContent(text, { size: 300, overlap: 0, strategy: "sentence" });
    expect(tiles.map((c) => c.text).join(" ")).toBe(text);
  });

  it("sentence cuts a sentence longer than the size as fixed does, and loses no word", () => {
    const long = `${"lorem ".repeat(100).trim()}.`;
    const text = `Short one. ${long} Tail sentence.`;
    const chunks = expectRanges(text, { size: 120, overlap: 20, strategy: "sentence" });
    expect(chunks.every((c) => c.text.length <= 120)).toBe(true);
    expect(chunks[0]!.text).toBe("Short one.");
    expect(chunks[chunks.length - 1]!.text).toBe("Tail sentence.");
    expect(chunks.map((c) => c.text).join(" ").split(/\s+/).filter((w) => w.startsWith("lorem")).length).toBeGreaterThanOrEqual(100);
  });

  it("finds sentences at . ! ? (closing quotes kept) and at line breaks", () => {
    const text = 'One. "Two!" Three?\nFour\nFive.';
    expect(sentenceSpans(text, 0, text.length).map(([s, e]) => text.slice(s, e))).toEqual(["One.", '"Two!"', "Three?", "Four", "Five."]);
  });

  it("heading never lets a chunk span two Markdown sections, and cuts a long section further", () => {
    const md = [
      "# Guide", "Intro text.", "",
      "## Install", "Run the installer.", "",
      "## Configure", "### Network", sentences(30), "",
      "```", "# not a heading inside code", "```", "",
      "## Last", "Bye.",
    ].join("\n");
    const chunks = expectRanges(md, { size: 400, overlap: 50, strategy: "heading" });
    expect(chunks[0]!.text).toBe("# Guide\nIntro text.");
    expect(chunks[1]!.text).toBe("## Install\nRun the installer.");
    // A heading alone (## Configure, then ### Network) stays with the section after it.
    expect(chunks[2]!.text.startsWith("## Configure\n### Network\nSentence 0")).toBe(true);
    expect(chunks.filter((c) => c.text.includes("Sentence")).length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.text.length <= 400)).toBe(true);
    expect(chunks.some((c) => c.text.startsWith("# not a heading"))).toBe(false);
    expect(chunks[chunks.length - 1]!.text).toBe("## Last\nBye.");
  });

  it("heading keeps any run of headings with the section after it", () => {
    const md = ["# Guide", "## Setup", "### Install", "Run the installer.", "", "## Use", "Call it."].join("\n");
    expect(expectRanges(md, { size: 400, overlap: 0, strategy: "heading" }).map((c) => c.text)).toEqual([
      "# Guide\n## Setup\n### Install\nRun the installer.",
      "## Use\nCall it.",
    ]);
    const html = "<h1>Guide</h1><h2>Setup</h2><h3>Install</h3><p>Run it.</p><h2>Use</h2><p>Call it.</p>";
    expect(expectRanges(html, { size: 400, overlap: 0, strategy: "heading" }).map((c) => c.text)).toEqual([
      "<h1>Guide</h1><h2>Setup</h2><h3>Install</h3><p>Run it.</p>",
      "<h2>Use</h2><p>Call it.</p>",
    ]);
  });

  it("heading splits HTML at <h1>-<h6>", () => {
    const html = "<h1>Title</h1><p>Intro.</p><h2>Part A</h2><p>Alpha text.</p><H3 class=x>Part B</H3><p>Beta.</p>";
    expect(headingStarts(html)).toEqual([html.indexOf("<h2>"), html.indexOf("<H3")]);
    expect(expectRanges(html, { size: 1000, overlap: 0, strategy: "heading" }).map((c) => c.text)).toEqual([
      "<h1>Title</h1><p>Intro.</p>",
      "<h2>Part A</h2><p>Alpha text.</p>",
      "<H3 class=x>Part B</H3><p>Beta.</p>",
    ]);
  });

  it("heading also splits where a reader marked a heading (text whose markup is gone), in the content as given", () => {
    const content = "Guide\n\nIntro text.\n\n\n   Install  \n\nRun the installer.\n\nConfigure\n\nSet it up.";
    const sections = [content.indexOf("Install"), content.indexOf("Configure")];
    const chunks = chunkContent(content, { size: 1000, overlap: 0, strategy: "heading" }, sections);
    expect(chunks.map((c) => c.text)).toEqual(["Guide\n\nIntro text.", "Install\n\nRun the installer.", "Configure\n\nSet it up."]);
    for (const c of chunks) expect(content.slice(c.docStart, c.docEnd).replace(/\s+/g, " ")).toBe(c.text.replace(/\s+/g, " "));
    // Other strategies ignore the marks.
    expect(chunkContent(content, { size: 1000, overlap: 0, strategy: "fixed" }, sections)).toHaveLength(1);
  });

  it("heading on text without headings is fixed chunking", () => {
    const text = sentences(50);
    expect(chunkContent(text, { size: 250, overlap: 40, strategy: "heading" })).toEqual(chunkText(text, 250, 40));
  });
});

describe("chunking settings", () => {
  const base: ChunkingSettings = { size: 1000, overlap: 100, strategy: "fixed" };

  it("fills what is not given from the current settings", () => {
    expect(chunkingSettings({ strategy: "sentence" }, base).settings).toEqual({ size: 1000, overlap: 100, strategy: "sentence" });
    expect(chunkingSettings({ size: 500, overlap: 0 }, base).settings).toEqual({ size: 500, overlap: 0, strategy: "fixed" });
  });

  it("refuses an overlap above half the size, and shrinks a carried-over one", () => {
    expect(chunkingSettings({ size: 400, overlap: 201 }, base).problems).toEqual([
      expect.objectContaining({ field: "chunking.overlap", type: "numberMax", message: expect.stringContaining("at most half") }),
    ]);
    expect(chunkingSettings({ size: 400, overlap: 200 }, base).problems).toEqual([]);
    expect(chunkingSettings({ size: 150 }, base).settings).toEqual({ size: 150, overlap: 75, strategy: "fixed" });
  });
});
