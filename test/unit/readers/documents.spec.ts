import { readFileSync } from "node:fs";
import path from "node:path";
import { decodeText } from "../../../services/knowledge-loader/readers/decode";
import { extractMarkdown } from "../../../services/knowledge-loader/readers/markdown";
import { extractPlainText, normaliseText } from "../../../services/knowledge-loader/readers/text";

const handbook = readFileSync(path.join(__dirname, "../../fixtures/readers/handbook.md"), "utf8");

describe("extractMarkdown", () => {
  const { title, content } = extractMarkdown(handbook, "https://e.com/handbook.md");

  it("takes the first heading as title and keeps headings as plain text", () => {
    expect(title).toBe("Support Handbook");
    expect(content.split("\n")[0]).toBe("Support Handbook");
    expect(content).toContain("\nEscalation levels\n");
    expect(content).toContain("\nSetext heading\n");
    expect(content).not.toMatch(/^#/m);
  });

  it("marks where each heading begins (ATX and setext), for the heading chunking", () => {
    const { sections } = extractMarkdown(handbook, "https://e.com/handbook.md");
    const lines = sections.map((at) => content.slice(at).split("\n")[0]);
    expect(lines).toEqual(expect.arrayContaining(["Escalation levels", "Setext heading"]));
    for (const at of sections) expect(content[at - 1]).toBe("\n");
    const small = extractMarkdown("Intro line.\n\n## First\n\nBody one.\n\nSecond\n------\n\nBody two.", "u");
    expect(small.sections.map((at) => small.content.slice(at, at + 6))).toEqual(["First\n", "Second"]);
  });

  it("keeps link and image words but not their URLs, and drops front matter and reference definitions", () => {
    expect(content).toContain("where to find\nthe escalation policy.");
    expect(content).toContain("Rotation diagram");
    expect(content).toContain("Escalate to the duty manager after an hour.");
    expect(content).not.toMatch(/example\.com\/(policies|img|people)|Front matter|\]\(|!\[/);
  });

  it("removes emphasis, quote and fence markers but keeps code, URLs written out and snake_case", () => {
    expect(content).toContain("Welcome to the support handbook. It explains how the on-call rotation works");
    expect(content).toContain("Quoted advice: keep customers informed.");
    expect(content).toContain("pager --ack INCIDENT_ID");
    expect(content).toContain("https://tracker.example.com");
    expect(content).toContain("snake_case_names and 2*3*4");
    expect(content).not.toMatch(/\*\*|```|^>/m);
  });

  it("uses the first line as title when there is no heading", () => {
    expect(extractMarkdown("Just text\nmore", "u").title).toBe("Just text");
    expect(extractMarkdown("", "https://e.com/empty.md")).toEqual({ title: "https://e.com/empty.md", content: "", sections: [] });
  });
});

describe("plain text", () => {
  it("normalises line ends, control characters, trailing spaces and blank runs", () => {
    expect(normaliseText("\uFEFFA\r\nB  \r\n\r\n\r\n\r\nC\u0007\tD\n")).toBe("A\nB\n\nC\tD");
  });

  it("titles a document with its first non-empty line", () => {
    expect(extractPlainText("\n\n  Release notes  \nbody", "u")).toEqual({ title: "Release notes", content: "Release notes\nbody" });
  });
});

describe("decodeText", () => {
  const latin1 = Buffer.from("Crème brûlée", "latin1");
  it("follows the BOM, then the Content-Type charset, then <meta charset> for HTML, else UTF-8", () => {
    expect(decodeText(Buffer.from("\uFEFFhé", "utf8"), "text/plain; charset=iso-8859-1")).toBe("hé");
    expect(decodeText(latin1, "text/plain; charset=ISO-8859-1")).toBe("Crème brûlée");
    const page = Buffer.concat([Buffer.from('<meta charset="windows-1252"><p>'), latin1]);
    expect(decodeText(page, "text/html", true)).toContain("Crème brûlée");
    expect(decodeText(Buffer.from("héllo"), "text/plain; charset=bogus")).toBe("héllo");
  });

  it("refuses binary bytes served as text (a NUL is in no text), and keeps UTF-16 with its BOM", () => {
    const binary = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 37) % 256));
    expect(() => decodeText(binary, "text/html", true)).toThrow(/binary \(it holds NUL bytes\), not text\/html/);
    expect(decodeText(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("hi", "utf16le")]), "text/plain")).toBe("hi");
  });
});
