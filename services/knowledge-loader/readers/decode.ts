import { FetchError } from "../../../lib/safe-fetch";

/** How far into an HTML document a <meta charset> may appear (the HTML spec's prescan window). */
const META_PRESCAN_BYTES = 1024;
const FALLBACK_CHARSET = "utf-8";

function supported(label: string | undefined): string | undefined {
  if (!label) return undefined;
  try {
    return new TextDecoder(label.trim().toLowerCase()).encoding;
  } catch {
    return undefined;
  }
}

function bomCharset(body: Buffer): string | undefined {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return "utf-8";
  if (body[0] === 0xff && body[1] === 0xfe) return "utf-16le";
  if (body[0] === 0xfe && body[1] === 0xff) return "utf-16be";
  return undefined;
}

/** The charset a Content-Type header names, if any. */
function headerCharset(contentType: string | undefined): string | undefined {
  return /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1];
}

function metaCharset(body: Buffer): string | undefined {
  const head = body.subarray(0, META_PRESCAN_BYTES).toString("latin1");
  return /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(head)?.[1];
}

/**
 * A fetched body as text: BOM first, then the Content-Type charset, then (for HTML) <meta charset>, else UTF-8.
 * Pages in legacy encodings (windows-1252, Shift_JIS...) would otherwise be indexed as mojibake. Refused (as
 * content of the wrong type) when the text holds a NUL, which no text does and binary bytes almost always do: a
 * file served as text/html was indexed as thousands of replacement and control characters.
 */
export function decodeText(body: Buffer, contentType?: string, html = false): string {
  const charset =
    bomCharset(body) ?? supported(headerCharset(contentType)) ?? (html ? supported(metaCharset(body)) : undefined) ?? FALLBACK_CHARSET;
  const text = new TextDecoder(charset).decode(body); // TextDecoder drops the BOM itself
  if (text.includes("\u0000")) throw new FetchError("bad-content-type", `the body is binary (it holds NUL bytes), not ${contentType || "text"}`, "");
  return text;
}
