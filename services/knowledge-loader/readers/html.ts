import { parseDocument } from "htmlparser2";
import { isDocument, isTag, isText, type ChildNode, type Document, type Element, type ParentNode } from "domhandler";
import { clipChars } from "../../../lib/text";
import { clipTitle } from "./text";

/** Links kept per page: enough for any real navigation, bounded against link farms. */
const MAX_LINKS = 2_000;

/** Never content: code, styling, embedded objects, navigation, forms, wiki macro parameters. */
const DROPPED_TAGS = new Set([
  "head", "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "nav", "aside", "form",
  "button", "select", "dialog", "ac:parameter",
]);
/** Page chrome when the whole body is the root; inside <main>/<article> a <header> is the article's own. */
const BODY_CHROME_TAGS = new Set(["header", "footer"]);
const DROPPED_ROLES = new Set(["navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"]);
/** Elements that end a line. */
const LINE_TAGS = new Set(["br", "div", "li", "tr", "dt", "dd", "section", "article", "main", "header", "footer", "figcaption", "address", "summary", "details", "td", "th", "caption"]);
/** Elements that stand as their own paragraph. */
const PARAGRAPH_TAGS = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol", "dl", "figure", "hr"]);

/** Heading elements: where a section of the text begins. */
const HEADING_TAGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6"]);

/** What a page gives the loader: text to index, and what the crawler needs to go on. */
export interface HtmlExtract {
  title: string;
  content: string;
  /** Offsets into content where a heading's text begins (the `heading` chunking's section marks). */
  sections: number[];
  /** Absolute http(s) links, fragment-free, in document order, deduplicated. */
  links: string[];
  canonical?: string;
  /** <meta name="robots"> wishes: noindex pages are not indexed, nofollow pages' links not followed. */
  noindex: boolean;
  nofollow: boolean;
  /** What the page says of itself (language, description, keywords, author), for the document's metadata. */
  attributes: PageAttributes;
}

/** A page's own description of itself, as the document's metadata carries it (each present one, at most 500 characters). */
export type PageAttributes = Partial<Record<"language" | "description" | "keywords" | "author", string>>;
const MAX_ATTRIBUTE_CHARS = 500;

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Concatenated text of a node's descendants (iterative: pages can nest deeper than the stack). */
function textContent(node: ParentNode): string {
  const parts: string[] = [];
  const stack: ChildNode[] = [...node.children].reverse();
  while (stack.length) {
    const item = stack.pop()!;
    if (isText(item)) parts.push(item.data);
    else if (isTag(item)) for (let i = item.children.length - 1; i >= 0; i--) stack.push(item.children[i]!);
  }
  return parts.join("");
}

function isDropped(el: Element, root: ParentNode, bodyIsRoot: boolean): boolean {
  const tag = el.name;
  if (DROPPED_TAGS.has(tag)) return true;
  if (bodyIsRoot && BODY_CHROME_TAGS.has(tag)) return true;
  if (el === root) return false;
  const role = el.attribs.role;
  if (role && DROPPED_ROLES.has(role)) return true;
  return "hidden" in el.attribs || el.attribs["aria-hidden"] === "true";
}

/**
 * Visible text of `root` with a line break where a line element ends and a blank line around paragraphs, and
 * where each heading's text begins in it. Adjacent breaks merge into the larger one. An iterative walk, so deep
 * pages do not overflow the stack.
 */
function textOf(root: ParentNode, bodyIsRoot: boolean): { text: string; sections: number[] } {
  const parts: string[] = [];
  /** Indexes in `parts` where a heading's text begins; a heading is pending until its first visible text. */
  const headingParts: number[] = [];
  let headingPending = false;
  let pendingBreak = "";
  let endsWithSpace = true; // nothing emitted yet: leading spaces are dropped
  const emitText = (text: string) => {
    if (pendingBreak) {
      if (text.trim() === "") return; // whitespace between blocks
      if (parts.length > 0) {
        parts[parts.length - 1] = parts[parts.length - 1]!.trimEnd();
        parts.push(pendingBreak);
      }
      pendingBreak = "";
      endsWithSpace = true;
    }
    if (endsWithSpace) text = text.trimStart();
    if (text === "") return;
    if (headingPending && text.trim()) {
      headingParts.push(parts.length);
      headingPending = false;
    }
    parts.push(text);
    endsWithSpace = text.endsWith(" ");
  };
  const emitBreak = (brk: string) => {
    if (brk.length > pendingBreak.length) pendingBreak = brk;
  };
  const stack: (ChildNode | ParentNode | string)[] = [root];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === "string") {
      emitBreak(item);
      continue;
    }
    if (isText(item as ChildNode)) {
      // Only runs and non-space whitespace are replaced: most text has neither, and this is the hot loop.
      emitText((item as { data: string }).data.replace(/\s\s+|[^\S ]/g, " "));
      continue;
    }
    if (isTag(item as ChildNode)) {
      const el = item as Element;
      if (isDropped(el, root, bodyIsRoot)) continue;
      // Its children come off the stack next: the first text emitted is the heading's.
      if (HEADING_TAGS.has(el.name)) headingPending = true;
      const boundary = PARAGRAPH_TAGS.has(el.name) ? "\n\n" : LINE_TAGS.has(el.name) ? "\n" : undefined;
      if (boundary) {
        emitBreak(boundary);
        stack.push(boundary);
      } else if (el.name === "td" || el.name === "th" || el.name === "img") {
        emitText(" ");
      }
    } else if (!isDocument(item as ChildNode)) continue;
    const children = (item as ParentNode).children;
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  const sections: number[] = [];
  let at = 0;
  let next = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i === headingParts[next]) {
      if (at > 0) sections.push(at);
      next++;
    }
    at += parts[i]!.length;
  }
  return { text: parts.join("").trimEnd(), sections };
}

/** The elements the extraction looks at, found in one pass (the first of each, in document order). */
interface Landmarks {
  title?: Element;
  ogTitle?: Element;
  /** <html lang>, <meta http-equiv="content-language">, <meta name="description|keywords|author">, og:description, og:locale. */
  meta: Record<string, string>;
  h1?: Element;
  base?: Element;
  robots?: Element;
  canonical?: Element;
  main?: Element;
  articles: Element[];
  body?: Element;
  anchors: Element[];
}

function landmarks(document: Document): Landmarks {
  const found: Landmarks = { articles: [], anchors: [], meta: {} };
  const note = (name: string, value: string | undefined) => {
    const text = collapse(value ?? "");
    if (text && !(name in found.meta)) found.meta[name] = clipChars(text, MAX_ATTRIBUTE_CHARS);
  };
  const stack: ChildNode[] = [...document.children].reverse();
  while (stack.length) {
    const el = stack.pop()!;
    if (!isTag(el)) continue;
    const a = el.attribs;
    switch (el.name) {
      case "title": found.title ??= el; break;
      case "h1": found.h1 ??= el; break;
      case "body": found.body ??= el; break;
      case "main": found.main ??= el; break;
      case "article": found.articles.push(el); break;
      case "a": found.anchors.push(el); break;
      case "base": if (a.href !== undefined) found.base ??= el; break;
      case "html": note("lang", a.lang); break;
      case "meta": {
        const name = (a.name ?? "").toLowerCase();
        if (a.property === "og:title") found.ogTitle ??= el;
        if (name === "robots") found.robots ??= el;
        if (name === "description" || name === "keywords" || name === "author") note(name, a.content);
        if ((a["http-equiv"] ?? "").toLowerCase() === "content-language") note("content-language", a.content);
        if (a.property === "og:description" || a.property === "og:locale") note(a.property, a.content);
        break;
      }
      case "link":
        if ((a.rel ?? "").toLowerCase().split(/\s+/).includes("canonical")) found.canonical ??= el;
        break;
    }
    if (a.role === "main") found.main ??= el;
    for (let i = el.children.length - 1; i >= 0; i--) stack.push(el.children[i]!);
  }
  return found;
}

function absoluteHttp(href: string | null | undefined, base: string): string | undefined {
  if (!href) return undefined;
  try {
    const url = new URL(href.trim(), base);
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
    url.hash = "";
    return url.href;
  } catch {
    return undefined;
  }
}

function pageTitle(found: Landmarks, url: string): string {
  const candidates = [found.title && textContent(found.title), found.ogTitle?.attribs.content, found.h1 && textContent(found.h1)];
  const title = candidates.map((t) => collapse(t ?? "")).find((t) => t.length > 0);
  return clipTitle(title ?? url);
}

/**
 * The main text of an HTML page, with its title, outgoing links and canonical URL. htmlparser2 builds a plain
 * node tree (DOM objects cost several times more to build and to collect); the main content is what
 * <main>, [role=main] or a lone <article> marks, else the body without chrome.
 */
export function extractHtml(html: string, url: string): HtmlExtract {
  const document = parseDocument(html);
  const found = landmarks(document);
  const base = absoluteHttp(found.base?.attribs.href, url) ?? url;
  const robots = (found.robots?.attribs.content ?? "").toLowerCase();

  const links = new Set<string>();
  for (const a of found.anchors) {
    if (links.size >= MAX_LINKS) break;
    if ((a.attribs.rel ?? "").toLowerCase().includes("nofollow")) continue;
    const href = absoluteHttp(a.attribs.href, base);
    if (href) links.add(href);
  }

  const marked = found.main ?? (found.articles.length === 1 ? found.articles[0] : undefined);
  const { text, sections } = marked ? textOf(marked, false) : textOf(found.body ?? document, true);
  const { meta } = found;
  const attributes: PageAttributes = Object.fromEntries(
    Object.entries({
      language: meta.lang ?? meta["content-language"] ?? meta["og:locale"],
      description: meta.description ?? meta["og:description"],
      keywords: meta.keywords,
      author: meta.author,
    }).filter(([, v]) => v !== undefined),
  );
  return {
    title: pageTitle(found, url),
    content: text,
    sections,
    links: [...links],
    canonical: absoluteHttp(found.canonical?.attribs.href, base),
    noindex: /\b(noindex|none)\b/.test(robots),
    nofollow: /\b(nofollow|none)\b/.test(robots),
    attributes,
  };
}
