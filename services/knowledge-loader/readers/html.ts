import { parseHTML } from "linkedom";

/** Longest title kept; longer ones are templates gone wrong. */
const MAX_TITLE_CHARS = 300;
/** Links kept per page: enough for any real navigation, bounded against link farms. */
const MAX_LINKS = 2_000;

/** Never content: code, styling, embedded objects, navigation, forms, wiki macro parameters. */
const DROPPED_TAGS = new Set([
  "HEAD", "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "IFRAME", "OBJECT", "CANVAS", "NAV", "ASIDE", "FORM",
  "BUTTON", "SELECT", "DIALOG", "AC:PARAMETER",
]);
/** Page chrome when the whole body is the root; inside <main>/<article> a <header> is the article's own. */
const BODY_CHROME_TAGS = new Set(["HEADER", "FOOTER"]);
const DROPPED_ROLES = new Set(["navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"]);
/** Elements that end a line. */
const LINE_TAGS = new Set(["BR", "DIV", "LI", "TR", "DT", "DD", "SECTION", "ARTICLE", "MAIN", "HEADER", "FOOTER", "FIGCAPTION", "ADDRESS", "SUMMARY", "DETAILS", "TD", "TH", "CAPTION"]);
/** Elements that stand as their own paragraph. */
const PARAGRAPH_TAGS = new Set(["P", "H1", "H2", "H3", "H4", "H5", "H6", "BLOCKQUOTE", "PRE", "TABLE", "UL", "OL", "DL", "FIGURE", "HR"]);

/** The part of linkedom's DOM this module walks (the project compiles without the DOM lib). */
interface DomNode {
  nodeType: number;
  tagName?: string;
  data?: string;
  textContent: string | null;
  lastChild: DomNode | null;
  previousSibling: DomNode | null;
  getAttribute?(name: string): string | null;
  hasAttribute?(name: string): boolean;
}
interface DomDocument {
  title: string;
  body: DomNode | null;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): ArrayLike<DomNode>;
  getElementsByTagName(tag: string): ArrayLike<DomNode>;
}

/** What a page gives the loader: text to index, and what the crawler needs to go on. */
export interface HtmlExtract {
  title: string;
  content: string;
  /** Absolute http(s) links, fragment-free, in document order, deduplicated. */
  links: string[];
  canonical?: string;
  /** <meta name="robots"> wishes: noindex pages are not indexed, nofollow pages' links not followed. */
  noindex: boolean;
  nofollow: boolean;
}

const ELEMENT = 1;
const TEXT = 3;

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function isDropped(el: DomNode, root: DomNode, bodyIsRoot: boolean): boolean {
  const tag = el.tagName!;
  if (DROPPED_TAGS.has(tag)) return true;
  if (bodyIsRoot && BODY_CHROME_TAGS.has(tag)) return true;
  if (el === root) return false;
  const role = el.getAttribute!("role");
  if (role && DROPPED_ROLES.has(role)) return true;
  return el.hasAttribute!("hidden") || el.getAttribute!("aria-hidden") === "true";
}

/**
 * Visible text of `root` with a line break where a line element ends and a blank line around paragraphs.
 * Adjacent breaks merge into the larger one. An iterative walk, so deep pages do not overflow the stack.
 */
function textOf(root: DomNode, bodyIsRoot: boolean): string {
  const parts: string[] = [];
  let pendingBreak = "";
  let endsWithSpace = true; // nothing emitted yet: leading spaces are dropped
  const emitText = (text: string) => {
    if (pendingBreak) {
      if (text.trim() === "") return; // whitespace between blocks
      if (parts.length > 0) {
        parts[parts.length - 1] = parts[parts.length - 1].trimEnd();
        parts.push(pendingBreak);
      }
      pendingBreak = "";
      endsWithSpace = true;
    }
    if (endsWithSpace) text = text.trimStart();
    if (text === "") return;
    parts.push(text);
    endsWithSpace = text.endsWith(" ");
  };
  const emitBreak = (brk: string) => {
    if (brk.length > pendingBreak.length) pendingBreak = brk;
  };
  const stack: (DomNode | string)[] = [root];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === "string") {
      emitBreak(item);
      continue;
    }
    if (item.nodeType === TEXT) {
      // Only runs and non-space whitespace are replaced: most text has neither, and this is the hot loop.
      emitText(item.data!.replace(/\s\s+|[^\S ]/g, " "));
      continue;
    }
    if (item.nodeType !== ELEMENT || isDropped(item, root, bodyIsRoot)) continue;
    const tag = item.tagName!;
    const boundary = PARAGRAPH_TAGS.has(tag) ? "\n\n" : LINE_TAGS.has(tag) ? "\n" : undefined;
    if (boundary) {
      emitBreak(boundary);
      stack.push(boundary);
    } else if (tag === "TD" || tag === "TH" || tag === "IMG") {
      emitText(" ");
    }
    for (let child = item.lastChild; child; child = child.previousSibling) stack.push(child);
  }
  return parts.join("").trimEnd();
}

/** <main>, [role=main], or a lone <article> when the page marks its content; otherwise the whole body. */
function contentRoot(document: DomDocument): { root: DomNode | null; bodyIsRoot: boolean } {
  const marked = document.querySelector("main, [role=main]");
  if (marked) return { root: marked, bodyIsRoot: false };
  const articles = document.getElementsByTagName("article");
  if (articles.length === 1) return { root: articles[0], bodyIsRoot: false };
  return { root: document.body, bodyIsRoot: true };
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

function pageTitle(document: DomDocument, url: string): string {
  const og = document.querySelector('meta[property="og:title"]')?.getAttribute!("content");
  const h1 = document.getElementsByTagName("h1")[0]?.textContent;
  const title = [document.title, og, h1].map((t) => collapse(t ?? "")).find((t) => t.length > 0);
  return (title ?? url).slice(0, MAX_TITLE_CHARS);
}

/**
 * The main text of an HTML page, with its title, outgoing links and canonical URL. linkedom parses (pure JS and
 * several times faster than jsdom); the main content is what <main>/<article> marks, else the body without chrome.
 */
export function extractHtml(html: string, url: string): HtmlExtract {
  const wrapped = /<(html|body)[\s>]/i.test(html) ? html : `<!DOCTYPE html><html><head></head><body>${html}</body></html>`;
  const document = parseHTML(wrapped).document as unknown as DomDocument;

  const baseHref = document.querySelector("base[href]")?.getAttribute!("href");
  const base = absoluteHttp(baseHref, url) ?? url;
  const robots = (document.querySelector('meta[name="robots" i]')?.getAttribute!("content") ?? "").toLowerCase();

  let canonical: string | undefined;
  for (const link of Array.from(document.getElementsByTagName("link"))) {
    const rel = (link.getAttribute!("rel") ?? "").toLowerCase().split(/\s+/);
    if (rel.includes("canonical")) {
      canonical = absoluteHttp(link.getAttribute!("href"), base);
      break;
    }
  }

  const links = new Set<string>();
  for (const a of Array.from(document.getElementsByTagName("a"))) {
    if (links.size >= MAX_LINKS) break;
    if ((a.getAttribute!("rel") ?? "").toLowerCase().includes("nofollow")) continue;
    const href = absoluteHttp(a.getAttribute!("href"), base);
    if (href) links.add(href);
  }

  const { root, bodyIsRoot } = contentRoot(document);
  return {
    title: pageTitle(document, url),
    content: root ? textOf(root, bodyIsRoot) : "",
    links: [...links],
    canonical,
    noindex: /\b(noindex|none)\b/.test(robots),
    nofollow: /\b(nofollow|none)\b/.test(robots),
  };
}
