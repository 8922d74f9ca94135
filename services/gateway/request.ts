import type { IncomingMessage } from "node:http";

/** First language tag of an Accept-Language header ("de-DE,de;q=0.9" gives "de-DE"); undefined when absent or "*". */
export function preferredLocale(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const ranked = header
    .split(",")
    .map((part) => {
      const [tag, ...params] = part.trim().split(";");
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return { tag: (tag ?? "").trim(), q: q ? Number(q.slice(2)) : 1 };
    })
    .filter(({ tag, q }) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(tag) && q > 0)
    .sort((a, b) => b.q - a.q);
  return ranked[0]?.tag;
}

/** Headers every response carries: no sniffing, no framing, no referrer leaks, no caching of API data. */
export const SECURITY_HEADERS: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};

/**
 * The client's address for throttling: the socket's peer, or, behind `trustedProxies` proxies of our own, the
 * X-Forwarded-For entry the outermost of them appended (entries further left are whatever the client sent).
 */
export function clientAddress(req: Pick<IncomingMessage, "headers" | "socket">, trustedProxies: number): string {
  const peer = req.socket.remoteAddress ?? "unknown";
  if (trustedProxies <= 0) return peer;
  const forwarded = String(req.headers["x-forwarded-for"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return forwarded[forwarded.length - trustedProxies] ?? peer;
}
