import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import zlib from "node:zlib";

/**
 * Fixture web sites for the knowledge readers: real HTTP on 127.0.0.1, pages generated on the fly, every
 * delay and size bounded. Each kind runs on its own server because robots.txt and /sitemap.xml live at a root.
 */
export type FixtureKind = "sitemap" | "crawl" | "flaky" | "files" | "wiki";

export interface FixtureSite {
  baseUrl: string;
  /** Requests served, by path and query (`/docs/page-00001`, `/wiki/rest/api/content?...`). */
  stats: Record<string, number>;
  /** Requests whose path starts with `prefix`. */
  hits(prefix: string): number;
  stop(): Promise<void>;
}

/** Pages the sitemap site lists (half /blog/post-N, half /docs/page-N) and the child sitemaps they are spread over. */
export const SITEMAP_SITE_PAGES = 12_000;
const SITEMAP_PARTS = 6;
/** The part served as a .gz file (gzip by content) and the one gzipped in transit (Content-Encoding). */
const GZIP_FILE_PART = 4;
const GZIP_ENCODED_PART = 2;
/** Upper bounds, so no fixture can stall or flood a test. */
const MAX_DELAY_MS = 300;
const HANG_MS = 5_000;
/** An endless body trickles this long at most, a byte per interval (never enough to reach a size cap). */
const ENDLESS_MS = 180_000;
const ENDLESS_INTERVAL_MS = 200;
const MAX_LARGE_KB = 20 * 1024;
const BOMB_BYTES = 64 * 1024 * 1024;
/** Wiki fixture: one space, its pages, the page size the server enforces, and the token it accepts. */
export const WIKI_SPACE = "ENG";
export const WIKI_PAGES = 30;
export const WIKI_TOKEN = "fixture-wiki-token-0123456789";
const WIKI_MAX_LIMIT = 10;

// ---------------------------------------------------------------- deterministic text

/** Deterministic pseudo-random numbers (mulberry32), so fixture text is the same on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seeded integers below n and picks from a list (prng's numbers: an LCG's `seed % n` cycles in its low bits and never draws some combinations). */
export function seeded(seed: number) {
  const next = prng(seed);
  const rnd = (n: number) => Math.floor(next() * n);
  return { rnd, pick: <T>(xs: readonly T[]) => xs[rnd(xs.length)]! };
}

/** Vocabulary of generated fixture text (shared with the knowledge bench's site). */
export const WORDS = (
  "account agent answer api archive audit backup balance billing browser budget cache calendar campaign capacity " +
  "catalog change channel checkout client cluster compliance configuration contract customer dashboard database " +
  "deadline delivery deployment design device discount document domain draft editor email employee endpoint " +
  "estimate event export feature feedback filter forecast form gateway guide handbook history import incident " +
  "index integration inventory invoice issue journey key knowledge latency ledger license limit log maintenance " +
  "manager margin market meeting message metric migration milestone model monitor network notice onboarding " +
  "order outage owner package partner password payment permission pipeline plan policy portal pricing priority " +
  "process product profile project proposal quota rate record refund region release report request resource " +
  "review risk roadmap role rollout schedule schema search security server service session settlement shipment " +
  "signal storage strategy subscription supplier support survey team template tenant ticket timeline token " +
  "traffic training transfer trial update upgrade usage vendor version warehouse webhook workflow workspace"
).split(" ");
export const VERBS = "improves explains tracks limits reduces describes protects lists updates measures connects schedules".split(" ");

function sentence(rand: () => number): string {
  const n = 8 + Math.floor(rand() * 10);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(i === 2 ? VERBS[Math.floor(rand() * VERBS.length)] : WORDS[Math.floor(rand() * WORDS.length)]);
  const text = words.join(" ");
  return text[0].toUpperCase() + text.slice(1) + ".";
}

/** Paragraphs of plausible business prose, different for every seed and identical for the same seed. */
export function fixtureParagraphs(seed: number, paragraphs: number): string[] {
  const rand = prng(seed);
  return Array.from({ length: paragraphs }, () => Array.from({ length: 3 + Math.floor(rand() * 4) }, () => sentence(rand)).join(" "));
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * A realistic page: head with scripts and styles, header, nav, main article, aside and footer, so extraction
 * has chrome to drop. `paragraphs` sets the size (about 0.5 KB each).
 */
export function fixturePage(opts: { title: string; seed: number; paragraphs?: number; links?: string[]; head?: string; marker?: string }): string {
  const body = fixtureParagraphs(opts.seed, opts.paragraphs ?? 6)
    .map((p, i) => (i % 3 === 2 ? `<h2>Section ${i}</h2>\n<p>${escapeHtml(p)}</p>` : `<p>${escapeHtml(p)}</p>`))
    .join("\n");
  const links = (opts.links ?? []).map((href) => `<li><a href="${escapeHtml(href)}">${escapeHtml(href)}</a></li>`).join("");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(opts.title)}</title>
<style>body{font-family:sans-serif}.nav{display:flex}</style>
<script>window.analytics = { track: function () { return "SCRIPT-NOISE"; } };</script>
${opts.head ?? ""}</head>
<body>
<header><div class="logo">ACME-HEADER-NOISE</div></header>
<nav><ul><li><a href="/">Home</a></li>${links}</ul></nav>
<main><article><h1>${escapeHtml(opts.title)}</h1>
${opts.marker ? `<p>${escapeHtml(opts.marker)}</p>` : ""}
${body}
</article></main>
<aside>ASIDE-NOISE related links</aside>
<footer>FOOTER-NOISE copyright</footer>
<script>console.log("SCRIPT-NOISE")</script>
</body></html>`;
}

// ---------------------------------------------------------------- a real, minimal PDF

function pdfString(text: string): string {
  return `(${text.replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

/** A valid PDF 1.4 with one Helvetica text page per entry and an Info title, xref offsets computed. */
export function minimalPdf(title: string, pages: string[][]): Buffer {
  const objects: string[] = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects[1] = "<< /Type /Catalog /Pages 2 0 R >>";
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(" ")}] /Count ${pages.length} >>`;
  objects[3] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";
  pages.forEach((lines, i) => {
    const stream = `BT /F1 12 Tf 72 720 Td 16 TL ${lines.map((l) => `${pdfString(l)} Tj T*`).join(" ")} ET`;
    objects[pageIds[i]] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i] + 1} 0 R >>`;
    objects[pageIds[i] + 1] = `<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}\nendstream`;
  });
  const infoId = objects.length;
  objects[infoId] = `<< /Title ${pdfString(title)} /Producer (fixture-site) >>`;
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(out, "latin1");
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) out += `${String(offsets[id]).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R /Info ${infoId} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

/** The PDF the files site serves, and what a reader must find in it. */
export const FIXTURE_PDF = {
  title: "Quarterly Operations Review",
  pages: [
    ["Quarterly Operations Review", "Warehouse throughput rose by twelve percent.", "Shipment delays fell (mostly) in the north region."],
    ["Second page: supplier onboarding", "Every supplier signs the data processing agreement."],
  ],
};

// ---------------------------------------------------------------- the sites

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, url: URL, base: string) => void | Promise<void>;

function send(res: http.ServerResponse, status: number, type: string, body: string | Buffer, headers: http.OutgoingHttpHeaders = {}) {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}
const html = (res: http.ServerResponse, body: string, status = 200) => send(res, status, "text/html; charset=utf-8", body);
const notFound = (res: http.ServerResponse) => send(res, 404, "text/plain", "not found");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.min(ms, MAX_DELAY_MS)));

/** Every page URL the sitemap site lists, in listing order (shuffled, so the reader's sort is what orders them). */
export function sitemapSiteUrls(base: string): string[] {
  const paths: string[] = [];
  for (let i = 1; i <= SITEMAP_SITE_PAGES / 2; i++) {
    paths.push(`/docs/page-${String(i).padStart(5, "0")}`, `/blog/post-${String(i).padStart(5, "0")}`);
  }
  const rand = prng(42);
  for (let i = paths.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [paths[i], paths[j]] = [paths[j], paths[i]];
  }
  return paths.map((p) => base + p);
}

function sitemapSite(base: string): Handler {
  const urls = sitemapSiteUrls(base);
  const perPart = Math.ceil(urls.length / SITEMAP_PARTS);
  const partName = (n: number) => (n === GZIP_FILE_PART ? `part-${n}.xml.gz` : `part-${n}.xml`);
  const partXml = (n: number) => {
    const own = urls.slice((n - 1) * perPart, n * perPart);
    // Duplicates a reader must collapse: a neighbour's URLs again, with a fragment or a tracking parameter.
    const dupes = urls.slice((n % SITEMAP_PARTS) * perPart, (n % SITEMAP_PARTS) * perPart + 25).map((u, i) => (i % 2 ? `${u}#top` : `${u}?utm_source=sitemap`));
    const entries = [...own, ...dupes].map((u) => `<url><loc>${u.replace(/&/g, "&amp;")}</loc><image:image><image:loc>${base}/img/x.png</image:loc></image:image></url>`);
    return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n${entries.join("\n")}\n</urlset>`;
  };
  return async (_req, res, url) => {
    const p = url.pathname;
    if (p === "/robots.txt") return send(res, 200, "text/plain", `User-agent: *\nDisallow: /private/\n\nSitemap: ${base}/sitemap_index.xml\n`);
    if (p === "/sitemap_index.xml") {
      const entries = Array.from({ length: SITEMAP_PARTS }, (_, i) => `<sitemap><loc>${base}/sitemaps/${partName(i + 1)}</loc></sitemap>`);
      return send(res, 200, "application/xml", `<?xml version="1.0"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries.join("")}</sitemapindex>`);
    }
    const part = /^\/sitemaps\/part-(\d+)\.xml(\.gz)?$/.exec(p);
    if (part && Number(part[1]) >= 1 && Number(part[1]) <= SITEMAP_PARTS && partName(Number(part[1])) === p.slice("/sitemaps/".length)) {
      const n = Number(part[1]);
      if (n === GZIP_FILE_PART) return send(res, 200, "application/gzip", zlib.gzipSync(partXml(n)));
      if (n === GZIP_ENCODED_PART) return send(res, 200, "application/xml", zlib.gzipSync(partXml(n)), { "content-encoding": "gzip" });
      return send(res, 200, "application/xml", partXml(n));
    }
    const page = /^\/(docs\/page|blog\/post)-(\d{5})$/.exec(p);
    if (page && Number(page[2]) >= 1 && Number(page[2]) <= SITEMAP_SITE_PAGES / 2) {
      const seed = Number(page[2]) * 2 + (page[1] === "blog/post" ? 1 : 0);
      return html(res, fixturePage({ title: `${page[1] === "blog/post" ? "Post" : "Page"} ${page[2]}`, seed, marker: `fixture-id ${p}` }));
    }
    return notFound(res);
  };
}

/**
 * The crawl site: a graph with cycles, duplicate spellings of the same page (trailing slash, fragment, query
 * order, tracking parameters), a redirect, a page that declares another canonical, robots.txt rules only our
 * bot's group allows, a non-HTML download behind an extension-less link, a PDF link, a depth chain, external
 * and non-http links.
 */
export const CRAWL_SITE = {
  /** Canonical paths a correct crawl yields, each exactly once. */
  pages: ["/", "/about", "/products?a=1&b=2", "/docs/a", "/docs/b", "/docs/c", "/private/open", ...Array.from({ length: 6 }, (_, i) => `/deep/${i + 1}`)],
  /** Paths a correct crawl never requests. */
  neverFetched: ["/private/secret", "/files/manual.pdf", "/img/logo.png", "/deep/7"],
  maxDepth: 6,
};

function crawlSite(base: string): Handler {
  const links: Record<string, string[]> = {
    "/": ["/about", "/about/", "/about#team", "/products?b=2&a=1&utm_source=home", "/docs/a", "/old-page", "/private/secret", "/private/open", "/files/manual.pdf", "/img/logo.png", "/download", "/deep/1", "https://example.com/external", "mailto:team@example.com", "javascript:void(0)", "/missing"],
    "/about": ["/", "/products?a=1&b=2", "/docs/a#intro"],
    "/products": ["/about/", "/docs/b"],
    "/docs/a": ["/docs/b", "/redirect-to-b"],
    "/docs/b": ["/docs/c", "/docs/a"],
    "/docs/c": ["/", "/docs/a/", "/print/docs-a"],
    "/private/open": ["/"],
  };
  const page = (p: string, seed: number, extra: { canonical?: string; title?: string } = {}) =>
    fixturePage({
      title: extra.title ?? `Crawl ${p}`,
      seed,
      paragraphs: 3,
      links: links[p] ?? [],
      marker: `fixture-id ${p}`,
      head: extra.canonical ? `<link rel="canonical" href="${extra.canonical}">` : "",
    });
  return (_req, res, url) => {
    const p = url.pathname.replace(/(.)\/$/, "$1");
    if (url.pathname === "/robots.txt") {
      return send(res, 200, "text/plain", "User-agent: *\nDisallow: /\n\n# our bot is welcome, but not in /private\nUser-agent: AgentPlatformBot\nUser-agent: OtherBot\nDisallow: /private\nAllow: /private/open$\n");
    }
    if (p === "/redirect-to-b") return send(res, 301, "text/plain", "", { location: "/docs/b" });
    if (p === "/download") return send(res, 200, "application/zip", Buffer.from("PK\u0003\u0004not really a zip"));
    // Same text as /docs/a under other URLs: one declares /docs/a canonical, the print view does too.
    if (p === "/old-page" || p === "/print/docs-a") return html(res, page("/docs/a", 101, { canonical: `${base}/docs/a`, title: "Crawl /docs/a" }));
    const deep = /^\/deep\/(\d+)$/.exec(p);
    if (deep) {
      const n = Number(deep[1]);
      return html(res, fixturePage({ title: `Deep ${n}`, seed: 500 + n, paragraphs: 2, links: [`/deep/${n + 1}`], marker: `fixture-id ${p}` }));
    }
    const seeds: Record<string, number> = { "/": 100, "/about": 102, "/products": 103, "/docs/a": 101, "/docs/b": 104, "/docs/c": 105, "/private/open": 106, "/private/secret": 107 };
    if (p in seeds) return html(res, page(p, seeds[p]));
    return notFound(res);
  };
}

function flakySite(): Handler {
  const tries = new Map<string, number>();
  const attempt = (key: string) => {
    const n = (tries.get(key) ?? 0) + 1;
    tries.set(key, n);
    return n;
  };
  return async (_req, res, url) => {
    const p = url.pathname;
    const ok = () => html(res, fixturePage({ title: `Flaky ${p}`, seed: p.length * 7, paragraphs: 2, marker: `fixture-id ${p}` }));
    if (p.startsWith("/500-once/")) return attempt(p) === 1 ? send(res, 500, "text/plain", "boom") : ok();
    if (p.startsWith("/503-twice/")) return attempt(p) <= 2 ? send(res, 503, "text/plain", "busy") : ok();
    if (p.startsWith("/429-once/")) return attempt(p) === 1 ? send(res, 429, "text/plain", "slow down", { "retry-after": "1" }) : ok();
    if (p.startsWith("/429-date/")) {
      return attempt(p) === 1 ? send(res, 429, "text/plain", "slow down", { "retry-after": new Date(Date.now() + 1000).toUTCString() }) : ok();
    }
    if (p === "/429-forever") return send(res, 429, "text/plain", "come back tomorrow", { "retry-after": "3600" });
    if (p === "/always-500") return send(res, 500, "text/plain", "still broken");
    // robots.txt that never answers: RFC 9309 says a crawler must then assume complete disallow.
    if (p === "/robots.txt") return send(res, 503, "text/plain", "robots unavailable");
    if (p.startsWith("/reset-once/")) return attempt(p) === 1 ? void res.socket?.destroy() : ok();
    // The body cut short: a Content-Length the first answer does not reach.
    if (p.startsWith("/cut-once/")) {
      if (attempt(p) > 1) return ok();
      res.writeHead(200, { "content-type": "text/html", "content-length": "5000" });
      return void res.write("<html><body>the first bytes", () => res.socket?.destroy());
    }
    if (p.startsWith("/slow/")) {
      await sleep(Number(url.searchParams.get("ms") ?? 100));
      return ok();
    }
    return notFound(res);
  };
}

function filesSite(): Handler {
  const pdf = minimalPdf(FIXTURE_PDF.title, FIXTURE_PDF.pages);
  const markdown = readFileSync(path.join(__dirname, "../fixtures/readers/handbook.md"));
  return (_req, res, url) => {
    switch (url.pathname) {
      case "/docs/review.pdf":
        return send(res, 200, "application/pdf", pdf);
      case "/docs/review-octet.pdf":
        return send(res, 200, "application/octet-stream", pdf);
      case "/docs/fake.pdf":
        return send(res, 200, "application/pdf", "<html>not a pdf</html>");
      case "/docs/broken.pdf":
        return send(res, 200, "application/pdf", "%PDF-1.4\n1 0 obj garbage");
      case "/docs/handbook.md":
        return send(res, 200, "text/markdown; charset=utf-8", markdown);
      case "/docs/notes.txt":
        return send(res, 200, "text/plain; charset=utf-8", "Release notes\r\n\r\n\r\n\r\nVersion 2 adds   webhooks.\r\n");
      case "/docs/latin1.html":
        return send(res, 200, "text/html", Buffer.from("<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>", "latin1"));
      default:
        return notFound(res);
    }
  };
}

function wikiSite(base: string): Handler {
  const pages = Array.from({ length: WIKI_PAGES }, (_, i) => {
    const id = String(1000 + i);
    const title = `Runbook ${i + 1}`;
    const [first, second] = fixtureParagraphs(9000 + i, 2);
    const storage =
      `<h1>${title}</h1><p>${escapeHtml(first)}</p>` +
      `<ac:structured-macro ac:name="info"><ac:parameter ac:name="title">MACRO-PARAM-NOISE</ac:parameter>` +
      `<ac:rich-text-body><p>${escapeHtml(second)}</p></ac:rich-text-body></ac:structured-macro>` +
      `<p>fixture-id wiki-${id}</p>`;
    return { id, type: "page", title, body: { storage: { value: storage, representation: "storage" } }, version: { number: 1 }, _links: { webui: `/spaces/${WIKI_SPACE}/pages/${id}/${title.replace(/ /g, "+")}` } };
  });
  return (req, res, url) => {
    if (url.pathname !== "/wiki/rest/api/content") return notFound(res);
    if (req.headers.authorization !== `Bearer ${WIKI_TOKEN}`) {
      return send(res, 401, "application/json", JSON.stringify({ statusCode: 401, message: "Unauthorized" }));
    }
    const space = url.searchParams.get("spaceKey");
    const start = Math.max(0, Number(url.searchParams.get("start") ?? 0));
    const limit = Math.min(WIKI_MAX_LIMIT, Math.max(1, Number(url.searchParams.get("limit") ?? 25)));
    const all = space === WIKI_SPACE ? pages : [];
    const results = all.slice(start, start + limit);
    const next = start + results.length < all.length ? `/rest/api/content?spaceKey=${space}&type=page&start=${start + results.length}&limit=${limit}` : undefined;
    const body = { results, start, limit, size: results.length, _links: { base: `${base}/wiki`, context: "/wiki", ...(next ? { next } : {}) } };
    return send(res, 200, "application/json", JSON.stringify(body));
  };
}

let bomb: Buffer | undefined;

/** Routes every fixture site has: redirects, header echo, encodings, sizes, delays. */
const commonRoutes: Handler = async (req, res, url) => {
  const q = url.searchParams;
  switch (url.pathname) {
    case "/_/redirect":
      return send(res, Number(q.get("status") ?? 302), "text/plain", "", { location: q.get("to") ?? "/" });
    case "/_/echo-headers":
      return send(res, 200, "application/json", JSON.stringify(req.headers));
    case "/_/gzip":
    case "/_/br":
    case "/_/deflate": {
      const text = fixturePage({ title: `Encoded ${url.pathname}`, seed: 77, paragraphs: 4 });
      const [encoding, data] =
        url.pathname === "/_/gzip" ? ["gzip", zlib.gzipSync(text)] : url.pathname === "/_/br" ? ["br", zlib.brotliCompressSync(text)] : ["deflate", zlib.deflateSync(text)];
      return send(res, 200, "text/html; charset=utf-8", data, { "content-encoding": encoding });
    }
    case "/_/large":
      return send(res, 200, "text/html", Buffer.alloc(Math.min(Number(q.get("kb") ?? 1), MAX_LARGE_KB) * 1024, "a"));
    case "/_/large-chunked": {
      // No content-length: the reader only learns the size by reading.
      res.writeHead(200, { "content-type": "text/html" });
      const chunk = Buffer.alloc(64 * 1024, "b");
      for (let i = 0; i < Math.min(Number(q.get("kb") ?? 1), MAX_LARGE_KB) / 64; i++) if (!res.write(chunk)) await new Promise((r) => res.once("drain", r));
      return void res.end();
    }
    case "/_/bomb":
      bomb ??= zlib.gzipSync(Buffer.alloc(BOMB_BYTES));
      return send(res, 200, "text/html", bomb, { "content-encoding": "gzip" });
    case "/_/hang":
      await new Promise((r) => setTimeout(r, HANG_MS).unref());
      return send(res, 200, "text/plain", "too late");
    case "/_/type":
      return send(res, 200, q.get("ct") ?? "application/octet-stream", "typed body");
    case "/_/endless": {
      // A stalled page: headers at once, then a body that never ends (until ENDLESS_MS or the client leaves).
      res.writeHead(200, { "content-type": "text/plain" });
      const end = Date.now() + ENDLESS_MS;
      while (Date.now() < end && !res.destroyed) {
        res.write("a");
        await new Promise((r) => setTimeout(r, ENDLESS_INTERVAL_MS).unref());
      }
      return void res.end();
    }
  }
  return undefined;
};

const SITES: Record<FixtureKind, (base: string) => Handler> = {
  sitemap: sitemapSite,
  crawl: crawlSite,
  flaky: flakySite,
  files: filesSite,
  wiki: wikiSite,
};

/** Starts one fixture site on 127.0.0.1 and a free port. */
export async function startFixtureSite(kind: FixtureKind): Promise<FixtureSite> {
  const stats: Record<string, number> = {};
  let site: Handler | undefined;
  let base = "";
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", base);
    const key = url.pathname + url.search;
    stats[key] = (stats[key] ?? 0) + 1;
    void (async () => {
      if (url.pathname.startsWith("/_/")) {
        await commonRoutes(req, res, url, base);
        if (!res.headersSent && !res.destroyed) notFound(res);
      } else {
        await site!(req, res, url, base);
      }
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  site = SITES[kind](base);
  return {
    baseUrl: base,
    stats,
    hits: (prefix) => Object.entries(stats).reduce((sum, [key, n]) => (key.startsWith(prefix) ? sum + n : sum), 0),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------- a site that changes between loads

/**
 * How a page of the changing site tells a refresh it did not change: `etag` pages send ETag and
 * Last-Modified (and answer 304 to a matching conditional request), `lastmod` pages also carry a sitemap
 * <lastmod>, `none` pages send neither (only the content hash can tell).
 */
export type PageValidatorKind = "etag" | "lastmod" | "none";

export interface ChangingSite {
  baseUrl: string;
  /** Page URLs the sitemap lists now, sorted. */
  listed(): string[];
  urlOf(n: number): string;
  /** How page n shows that it is unchanged (mixed: n % 3 gives none, etag, lastmod). */
  validatorsOf(n: number): PageValidatorKind;
  /** A new version of page n (new text, new ETag, Last-Modified and lastmod). */
  change(n: number): void;
  /** Page n leaves the sitemap and answers 404 from now on. */
  remove(n: number): void;
  /** Page n stays listed but answers `status` (404, 410, 503...) to its next `times` requests. */
  fail(n: number, status: number, times: number): void;
  /** The marker text of page n's current version ("page-7 v2"), for search assertions. */
  marker(n: number): string;
  /** Page requests answered 200 and 304 since the last reset, and requests of sitemap pages. */
  counts: { full: number; notModified: number };
  resetCounts(): void;
  stop(): Promise<void>;
}

/** Fixed clock of the changing site, so validators are stable: version v of every page dates from day v. */
const CHANGING_SITE_EPOCH = Date.UTC(2026, 0, 1);

/**
 * A sitemap site of `pages` pages (/p/00001 ...), also crawlable from its home page, that a test or bench
 * changes between loads: changed, removed and failing (flapping 404, transient 503) pages, with all three
 * kinds of validators. With `children`, the home page links only the first half of the pages, and page n of
 * that half links page n + pages/2, which no other page links.
 */
export async function startChangingSite(
  pages: number,
  {
    paragraphs = 4,
    validators = "mixed",
    seed = 0,
    children = false,
  }: { paragraphs?: number; validators?: PageValidatorKind | "mixed"; seed?: number; children?: boolean } = {},
): Promise<ChangingSite> {
  const version = new Map<number, number>();
  const removed = new Set<number>();
  const failing = new Map<number, { status: number; times: number }>();
  const counts = { full: 0, notModified: 0 };
  const pathOf = (n: number) => `/p/${String(n).padStart(5, "0")}`;
  const validatorsOf = (n: number): PageValidatorKind => (validators === "mixed" ? (["none", "etag", "lastmod"] as const)[n % 3] : validators);
  const versionOf = (n: number) => version.get(n) ?? 1;
  const modified = (n: number) => new Date(CHANGING_SITE_EPOCH + versionOf(n) * 86_400_000);
  const marker = (n: number) => `page-${n} v${versionOf(n)}`;
  const live = () => Array.from({ length: pages }, (_, i) => i + 1).filter((n) => !removed.has(n));
  const half = Math.floor(pages / 2);
  const linkedFromHome = (n: number) => !children || n <= half;
  const childLinks = (n: number) => (children && n <= half ? [pathOf(n + half)] : []);
  let base = "";

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", base);
    if (url.pathname === "/robots.txt") return send(res, 200, "text/plain", `User-agent: *\nAllow: /\n\nSitemap: ${base}/sitemap.xml\n`);
    // The home page links every listed page, so the site can be crawled as well as read from its sitemap.
    if (url.pathname === "/") return html(res, fixturePage({ title: "Home", seed: 7, paragraphs: 1, links: live().filter(linkedFromHome).map(pathOf) }));
    if (url.pathname === "/sitemap.xml") {
      const entries = live().map((n) => {
        const lastmod = validatorsOf(n) === "lastmod" ? `<lastmod>${modified(n).toISOString()}</lastmod>` : "";
        return `<url><loc>${base}${pathOf(n)}</loc>${lastmod}</url>`;
      });
      return send(res, 200, "application/xml", `<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${entries.join("\n")}\n</urlset>`);
    }
    const match = /^\/p\/(\d{5})$/.exec(url.pathname);
    const n = match ? Number(match[1]) : 0;
    if (!match || n < 1 || n > pages || removed.has(n)) return notFound(res);
    const failure = failing.get(n);
    if (failure && failure.times > 0) {
      failure.times--;
      return send(res, failure.status, "text/plain", "unavailable");
    }
    const etag = `"p${n}-v${versionOf(n)}"`;
    const headers = validatorsOf(n) === "none" ? {} : { etag, "last-modified": modified(n).toUTCString() };
    if (validatorsOf(n) !== "none" && req.headers["if-none-match"] === etag) {
      counts.notModified++;
      res.writeHead(304, headers).end();
      return;
    }
    counts.full++;
    // The text depends on the version; the seed keeps each page's prose distinct.
    const body = fixturePage({ title: `Page ${n}`, seed: seed * 100_000_000 + n * 1000 + versionOf(n), paragraphs, marker: marker(n), links: childLinks(n) });
    send(res, 200, "text/html; charset=utf-8", body, headers);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: base,
    listed: () => live().map((n) => base + pathOf(n)).sort(),
    urlOf: (n) => base + pathOf(n),
    validatorsOf,
    change: (n) => void version.set(n, versionOf(n) + 1),
    remove: (n) => void removed.add(n),
    fail: (n, status, times) => void failing.set(n, { status, times }),
    marker,
    counts,
    resetCounts() {
      counts.full = 0;
      counts.notModified = 0;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
