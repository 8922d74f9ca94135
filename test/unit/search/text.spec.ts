import { chunkContent, chunkText, normalizeContent } from "../../../lib/search/chunking";
import { highlight } from "../../../lib/search/highlight";
import { STOP_WORDS, terms, words } from "../../../lib/search/tokenizer";
import { wellFormed } from "../../../lib/text";

describe("tokenizer", () => {
  it("lower-cases, folds accents and splits on anything that is not a letter or digit", () => {
    expect(words("Crème Brûlée, v2.0 — ÜBER-cool")).toEqual(["creme", "brulee", "v2", "0", "uber", "cool"]);
  });

  it("drops stop words and stems what is left (Porter2)", () => {
    expect(terms("The passwords were reset by the users")).toEqual(["password", "reset", "user"]);
    expect(STOP_WORDS.has("the")).toBe(true);
    expect(terms("running runs ran")).toEqual(["run", "run", "ran"]);
  });

  it("cuts very long tokens so hashes cannot bloat the vocabulary", () => {
    expect(terms("a".repeat(500))[0]!.length).toBeLessThanOrEqual(40);
  });
});

describe("chunking", () => {
  it("keeps a short text as one chunk and normalises blank space", () => {
    expect(normalizeContent("a \t b\r\n\r\n\r\n\r\nc")).toBe("a b\n\nc");
    expect(chunkText("Hello   world.")).toEqual([{ position: 0, text: "Hello world.", start: 0, end: 12, docStart: 0, docEnd: 14 }]);
  });

  it("splits at most `size` characters, prefers sentence ends, and overlaps consecutive chunks", () => {
    const text = Array.from({ length: 40 }, (_, i) => `This is sentence ${i} of the text.`).join(" ");
    const chunks = chunkText(text, 200, 50);
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(200);
      // Chunks end after a sentence and start on a word boundary, never mid-word.
      expect(c.text).toMatch(/\.$/);
      expect(c.start === 0 || /\s/.test(text[c.start - 1]!)).toBe(true);
    }
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start).toBeLessThan(chunks[i - 1]!.end);
    expect(chunks.map((c) => c.position)).toEqual(chunks.map((_, i) => i));
  });

  it("covers the whole text: every word lands in some chunk", () => {
    const text = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
    const seen = new Set(chunkText(text, 100, 20).flatMap((c) => c.text.split(" ")));
    for (let i = 0; i < 500; i++) expect(seen.has(`w${i}`)).toBe(true);
  });

  it("gives each chunk its range in the content as given (a citation's offsets)", () => {
    const plain = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} is here.`).join(" ");
    const chunks = chunkText(plain, 200, 50);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(plain.slice(c.docStart, c.docEnd)).toBe(c.text);
    // Blank space the chunker collapsed is still in the range: the same text, whitespace runs aside.
    const raw = `  Title\r\n\r\n\r\nFirst \t para.  ${"Lorem ipsum dolor sit amet. ".repeat(30)}\n\n\n  Last   words.  `;
    for (const c of chunkText(raw, 150, 30)) {
      const slice = raw.slice(c.docStart, c.docEnd);
      expect(slice.replace(/\s+/g, " ")).toBe(c.text.replace(/\s+/g, " "));
      expect(slice).toBe(slice.trim());
    }
  });

  it("defaults to 1000-character chunks and caps overlap at half the size", () => {
    const text = "x ".repeat(3000);
    expect(chunkText(text).every((c) => c.text.length <= 1000)).toBe(true);
    expect(chunkText(text, 100, 500).length).toBeLessThan(200);
  });

  it("never cuts an emoji in half, with or without a natural break near the limit", () => {
    for (const text of ["😀".repeat(1500), `a${"😀".repeat(1500)}`, "ab 😀😀😀 cd ".repeat(300)]) {
      for (const strategy of ["fixed", "sentence", "heading"] as const) {
        for (const size of [1, 2, 3, 7, 100, 1001]) {
          const chunks = chunkContent(text, { size, overlap: Math.floor(size / 3), strategy });
          expect(chunks.filter((c) => !wellFormed(c.text) || !wellFormed(text.slice(c.docStart, c.docEnd)))).toEqual([]);
          expect(chunks.map((c) => c.text).join("").replace(/\s/g, "")).toContain("😀");
        }
      }
    }
  });
});

describe("highlight", () => {
  it("marks the words matching the query's terms (stemmed, case and accents folded), escaping the rest", () => {
    expect(highlight("Running dogs & <cats> run fast.", "the runner's DOG")).toBe("Running <mark>dogs</mark> &amp; &lt;cats&gt; run fast.");
    expect(highlight("Café au lait, cafe noir.", "cafe")).toBe("<mark>Café</mark> au lait, <mark>cafe</mark> noir.");
    expect(highlight("Connected connections connect.", "connecting")).toBe("<mark>Connected</mark> <mark>connections</mark> <mark>connect</mark>.");
  });

  it("cuts a long chunk to the window around the matches, at word boundaries, with ellipses", () => {
    const text = `${"filler word ".repeat(40)}the kubernetes operator restarts pods ${"more text ".repeat(40)}`;
    const h = highlight(text, "kubernetes pods");
    expect(h).toMatch(/^…/);
    expect(h).toMatch(/…$/);
    expect(h).toContain("<mark>kubernetes</mark> operator restarts <mark>pods</mark>");
    expect(h.replace(/<\/?mark>|…/g, "").length).toBeLessThanOrEqual(200);
  });

  it("never cuts an emoji in half at either end of the window", () => {
    for (let shift = 0; shift < 6; shift++) {
      const text = `${"x".repeat(shift)}${"😀".repeat(150)} kubernetes ${"😀".repeat(150)}`;
      expect(wellFormed(highlight(text, "kubernetes", 201))).toBe(true);
      expect(wellFormed(highlight(`${"x".repeat(shift)}${"😀".repeat(300)}`, "unrelated", 201))).toBe(true);
    }
  });

  it("shows the chunk's opening when nothing matches (a semantic hit) or the query has only stop words", () => {
    const text = "word ".repeat(100).trim();
    expect(highlight(text, "unrelated")).toBe(`${"word ".repeat(39)}word…`);
    expect(highlight("Short text.", "the of")).toBe("Short text.");
  });
});
