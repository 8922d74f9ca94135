import http from "node:http";
import type { AddressInfo } from "node:net";
import { prng, VERBS, WORDS } from "../../test/harness/fixture-site";

/**
 * The knowledge bench's fixture web site on 127.0.0.1: any number of sub-sites under one server, each a
 * sitemap of generated pages. `/<name>-<pages>/sitemap.xml` lists `/<name>-<pages>/page-00001` up to
 * `page-<pages>`; every page is about 22 KB of HTML (head with inline style and script, a large navigation,
 * a sidebar and a footer around an article of about 7 KB of text), different for every site and page, so
 * extraction has realistic chrome to drop and the index never sees two identical chunks.
 */
export interface BenchSite {
  baseUrl: string;
  /** The sitemap URL of a sub-site of `pages` pages; `name` keeps sources of one run apart. */
  sitemap(name: string, pages: number): string;
  /** Page requests served so far (sitemaps and robots.txt not counted). */
  readonly pageRequests: number;
  /** Pages requested more than once (work a resumed load did again). */
  readonly pagesRefetched: number;
  /** Average size of the pages served, in bytes. */
  readonly averagePageBytes: number;
  stop(): Promise<void>;
}

/** Most pages one sub-site may list (the platform's sitemap ceiling is 10,000). */
const MAX_PAGES = 10_000;
const NAV_LINKS = 70;
const FOOTER_LINKS = 20;
const ARTICLE_SECTIONS = 6;

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

function pick<T>(rand: () => number, items: T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function sentence(rand: () => number, tag: string): string {
  const n = 9 + Math.floor(rand() * 10);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(i === 2 ? pick(rand, VERBS) : i === 5 ? `${pick(rand, WORDS)}-${Math.floor(rand() * 9000 + 1000)}` : pick(rand, WORDS));
  if (rand() < 0.2) words.push(`(${tag})`);
  const text = words.join(" ");
  return text[0]!.toUpperCase() + text.slice(1) + ".";
}

function title(rand: () => number): string {
  return Array.from({ length: 3 }, () => pick(rand, WORDS)).map((w) => w[0]!.toUpperCase() + w.slice(1)).join(" ");
}

/** Site-wide chrome, the same on every page of a sub-site (as on a real site): about 12 KB of the 22. */
function chrome(site: string) {
  const rand = prng(hash(`chrome ${site}`));
  const nav = Array.from({ length: NAV_LINKS }, (_, i) => {
    const label = title(rand);
    return `<li class="nav-item"><a class="nav-link" href="/${site}/section-${i % 12}/${label.toLowerCase().replace(/ /g, "-")}">${label}</a></li>`;
  }).join("\n");
  const footer = Array.from({ length: FOOTER_LINKS }, (_, i) => `<a href="/${site}/legal/${i}">${title(rand)}</a>`).join(" · ");
  const style = Array.from({ length: 25 }, (_, i) => `.c${i}{margin:${i}px;padding:${i % 7}px;color:#${(i * 99991).toString(16).slice(0, 6).padEnd(6, "0")}}`).join("");
  const script = `window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag("js",new Date());` +
    Array.from({ length: 15 }, (_, i) => `function track${i}(e){return dataLayer.push({event:"click-${i}",target:e&&e.id})}`).join(";");
  return { nav, footer, style, script };
}

/** One page: chrome around an article of ARTICLE_SECTIONS sections (paragraphs, a list, a table), about 7 KB of text. */
function renderPage(site: string, n: number, shell: ReturnType<typeof chrome>): string {
  const id = `${site}/page-${String(n).padStart(5, "0")}`;
  const rand = prng(hash(id));
  const tag = `ref ${site} ${n}`;
  const heading = `${title(rand)} ${n}`;
  const sections = Array.from({ length: ARTICLE_SECTIONS }, (_, s) => {
    const paragraphs = Array.from({ length: 2 }, () => `<p>${Array.from({ length: 4 + Math.floor(rand() * 2) }, () => sentence(rand, tag)).join(" ")}</p>`).join("\n");
    const extra =
      s % 3 === 1
        ? `<ul>${Array.from({ length: 4 }, () => `<li>${sentence(rand, tag)}</li>`).join("")}</ul>`
        : s % 3 === 2
          ? `<table><tr><th>Item</th><th>Owner</th><th>Status</th></tr>${Array.from({ length: 3 }, () => `<tr><td>${pick(rand, WORDS)}-${Math.floor(rand() * 999)}</td><td>${pick(rand, WORDS)}</td><td>${pick(rand, ["open", "done", "blocked"])}</td></tr>`).join("")}</table>`
          : "";
    return `<section id="s${s}"><h2>${title(rand)}</h2>\n${paragraphs}\n${extra}</section>`;
  }).join("\n");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${heading} | ${site} docs</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="description" content="${heading}">
<link rel="canonical" href="/${id}">
<style>${shell.style}</style>
<script>${shell.script}</script>
</head>
<body class="docs">
<header class="site-header"><div class="logo">${site} documentation</div><form class="search"><input name="q" placeholder="Search"><button>Go</button></form></header>
<nav class="site-nav" aria-label="Main"><ul>
${shell.nav}
</ul></nav>
<main><article>
<h1>${heading}</h1>
<p class="lead">Page ${n} of the ${site} documentation (${tag}).</p>
${sections}
</article></main>
<aside class="related"><h3>Related</h3><ul>${Array.from({ length: 8 }, (_, i) => `<li><a href="/${site}/page-${String(((n + i * 37) % MAX_PAGES) + 1).padStart(5, "0")}">${title(rand)}</a></li>`).join("")}</ul></aside>
<footer class="site-footer"><p>${shell.footer}</p><p>© ${site} Inc. All rights reserved.</p></footer>
<script>document.querySelectorAll("a").forEach(function(a){a.addEventListener("click",track0)})</script>
</body></html>`;
}

/** Starts the site on 127.0.0.1 and a free port. Pages are generated once and kept (a few tens of MB at most). */
export async function startBenchSite(): Promise<BenchSite> {
  const cache = new Map<string, Buffer>();
  const shells = new Map<string, ReturnType<typeof chrome>>();
  const served = new Map<string, number>();
  let pageRequests = 0;
  let pageBytes = 0;
  let base = "";
  const send = (res: http.ServerResponse, status: number, type: string, body: string | Buffer) => {
    res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", base);
    if (url.pathname === "/robots.txt") return send(res, 200, "text/plain", "User-agent: *\nAllow: /\n");
    const match = /^\/([a-z0-9]+)-(\d+)\/(sitemap\.xml|page-(\d{5}))$/.exec(url.pathname);
    const pages = Number(match?.[2]);
    if (!match || pages < 1 || pages > MAX_PAGES) return send(res, 404, "text/plain", "not found");
    const site = `${match[1]}-${match[2]}`;
    if (match[3] === "sitemap.xml") {
      const locs = Array.from({ length: pages }, (_, i) => `<url><loc>${base}/${site}/page-${String(i + 1).padStart(5, "0")}</loc></url>`);
      return send(res, 200, "application/xml", `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${locs.join("\n")}\n</urlset>`);
    }
    const n = Number(match[4]);
    if (n < 1 || n > pages) return send(res, 404, "text/plain", "not found");
    const key = url.pathname;
    let body = cache.get(key);
    if (!body) {
      let shell = shells.get(site);
      if (!shell) shells.set(site, (shell = chrome(site)));
      body = Buffer.from(renderPage(site, n, shell));
      cache.set(key, body);
    }
    pageRequests++;
    pageBytes += body.length;
    served.set(key, (served.get(key) ?? 0) + 1);
    send(res, 200, "text/html; charset=utf-8", body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: base,
    sitemap: (name, pages) => {
      if (!/^[a-z0-9]+$/.test(name) || pages < 1 || pages > MAX_PAGES) throw new Error(`bad sub-site ${name}-${pages}`);
      return `${base}/${name}-${pages}/sitemap.xml`;
    },
    get pageRequests() {
      return pageRequests;
    },
    get pagesRefetched() {
      let n = 0;
      for (const count of served.values()) if (count > 1) n++;
      return n;
    },
    get averagePageBytes() {
      return pageRequests ? Math.round(pageBytes / pageRequests) : 0;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One page as served, for checking its size and the text extraction offline. */
export function samplePage(site: string, n: number): string {
  return renderPage(site, n, chrome(site));
}
