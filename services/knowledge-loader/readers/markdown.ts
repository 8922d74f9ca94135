import { clipTitle, firstLineTitle, normaliseText } from "./text";

/** Marks a heading line while the text is normalised (a private-use character, removed from the input first). */
const HEADING_MARK = "\uE000";

function stripInline(line: string): string {
  return line
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1") // image: keep its alt text
    .replace(/!\[([^\]]*)\]\[[^\]]*\]/g, "$1")
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1") // inline link: keep its text
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, "$1") // reference link
    .replace(/<(https?:\/\/[^>\s]+)>/g, "$1") // autolink
    .replace(/<\/?[a-zA-Z][^>]*>/g, "") // inline HTML tags
    .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, "$2") // strong
    .replace(/(^|[^\w*])([*_])(?=\S)(.+?)(?<=\S)\2(?![\w*])/g, "$1$3") // emphasis, not snake_case
    .replace(/~~(.+?)~~/g, "$1")
    .replace(/`([^`]+)`/g, "$1");
}

/**
 * A markdown document as readable text: headings stay as their text, links and images keep their words and
 * lose their URLs, front matter, reference definitions and fence markers go; code inside fences is kept.
 * Its title is the first heading, else the first line.
 */
export function extractMarkdown(markdown: string, url: string): { title: string; content: string; sections: number[] } {
  const lines = normaliseText(markdown.replaceAll(HEADING_MARK, "")).replace(/^---\n[\s\S]*?\n---(\n|$)/, "").split("\n");
  const out: string[] = [];
  let title: string | undefined;
  let inFence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*(```|~~~)/.test(line)) {
      inFence = !inFence;
      continue;
    }
    if (inFence) {
      out.push(line);
      continue;
    }
    if (/^\s{0,3}\[[^\]]+\]:\s*\S+/.test(line)) continue; // reference definition
    if (/^\s{0,3}(=+|-+)\s*$/.test(line) && out.length > 0 && out[out.length - 1].trim() !== "") {
      title ??= out[out.length - 1].trim(); // setext underline: the line above is a heading
      out[out.length - 1] = HEADING_MARK + out[out.length - 1];
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) continue; // thematic break
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const text = stripInline(heading[1]);
      title ??= text;
      out.push(HEADING_MARK + text);
      continue;
    }
    out.push(stripInline(line.replace(/^(\s*)>\s?/, "$1")));
  }
  // Where each heading begins once the marks are out: the section marks of the `heading` chunking.
  const pieces = normaliseText(out.join("\n")).split(HEADING_MARK);
  const sections: number[] = [];
  let at = pieces[0]!.length;
  for (const piece of pieces.slice(1)) {
    if (at > 0) sections.push(at);
    at += piece.length;
  }
  const content = pieces.join("");
  return { title: title ? clipTitle(title) : firstLineTitle(content, url), content, sections };
}
