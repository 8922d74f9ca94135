/** Query parameters that only track campaigns or clicks: the same page under another name. */
const TRACKING_PARAMS = /^(utm_\w+|gclid|fbclid|msclkid|yclid|mc_cid|mc_eid|_ga|_gl|ref_src)$/i;
/** Links that cannot be HTML pages; skipped before fetching, so a crawl does not spend its budget on them. */
const NON_HTML_EXTENSIONS = new Set(
  (
    "pdf zip gz tgz bz2 xz 7z rar tar jpg jpeg png gif webp svg ico bmp tif tiff avif mp3 mp4 m4a m4v mov avi webm ogg wav flac " +
    "css js mjs json xml rss atom txt csv tsv doc docx xls xlsx ppt pptx odt ods odp rtf exe dmg msi iso apk bin woff woff2 ttf otf eot"
  ).split(" "),
);

/**
 * One spelling per page, so duplicates collapse: http(s) only, no fragment or credentials, tracking parameters
 * dropped, the rest sorted. Undefined for anything that is not a web URL. The path stays as it is, trailing slash
 * included: "/docs/" and "/docs" are different resources to a server (one is often a 404), and relative links
 * resolve against the one fetched ("sub/" on "/docs/" is "/docs/sub/"). Both spellings of one page meet at a
 * redirect's target or in the crawl's content hashes.
 */
export function canonicalUrl(raw: string, base?: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw.trim(), base);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  url.hash = "";
  url.username = "";
  url.password = "";
  if (url.hostname.endsWith(".")) url.hostname = url.hostname.slice(0, -1);
  const params = [...url.searchParams].filter(([key]) => !TRACKING_PARAMS.test(key));
  params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  url.search = params.length ? new URLSearchParams(params).toString() : "";
  return url.href;
}

/** Whether a URL's path ends in an extension that is never an HTML page. */
export function looksNonHtml(url: string): boolean {
  const path = new URL(url).pathname;
  const dot = path.lastIndexOf(".");
  return dot > path.lastIndexOf("/") && NON_HTML_EXTENSIONS.has(path.slice(dot + 1).toLowerCase());
}
