import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

/** Largest accepted POST /mcp body; the SDK transport answers 413 past it (and 415 for non-JSON bodies). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Request headers the MCP exchange reads: content negotiation, protocol, and the caller's credentials. */
export const MCP_REQUEST_HEADERS = ["accept", "content-type", "mcp-protocol-version", "authorization", "x-auth-token", "x-account-id"] as const;

/** One POST /mcp as plain data, so it can cross the transporter from whichever HTTP edge received it. */
export interface McpExchangeRequest {
  headers: Record<string, string>;
  body: string;
}

/** The HTTP answer to send back: status, headers and body text. */
export interface McpExchangeAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Keeps the headers the exchange reads, as plain strings (Node gives arrays for repeated headers). */
export function mcpRequestHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of MCP_REQUEST_HEADERS) {
    const value = headers[name];
    if (value !== undefined) kept[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return kept;
}

/**
 * Answers one stateless Streamable HTTP POST with JSON responses (no sessions, no SSE): a fresh transport per
 * request, connected to the request's own MCP server, both closed once the answer is complete.
 */
export async function answerMcpRequest(server: McpServer, request: McpExchangeRequest): Promise<McpExchangeAnswer> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MAX_BODY_BYTES,
  });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(
      new Request("http://mcp.invalid/mcp", { method: "POST", headers: request.headers, body: request.body }),
    );
    return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  } finally {
    await transport.close();
    await server.close();
  }
}
