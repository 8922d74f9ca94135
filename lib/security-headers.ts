/* Shared by the gateway and the MCP endpoint it proxies to. */

/** Headers every response carries: no sniffing, no framing, no referrer leaks, no caching of API data. */
export const SECURITY_HEADERS: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};
