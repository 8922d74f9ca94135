import type { IncomingMessage, ServerResponse } from "node:http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SECURITY_HEADERS } from "../gateway/request";

/** Largest accepted POST /mcp body; the SDK transport answers 413 past it (and 415 for non-JSON bodies). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** JSON-RPC error codes the HTTP layer answers with itself (the SDK's own choices for the same cases). */
const SERVER_ERROR = -32000;
const INTERNAL_ERROR = -32603;

export interface McpHttpDeps {
  /** A fresh MCP server for this request (stateless: nothing is shared between requests). */
  serverFor: (req: IncomingMessage) => McpServer;
  health: () => Record<string, unknown>;
  logError: (message: string, err: unknown) => void;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { ...headers, "Content-Type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

/**
 * The MCP server's HTTP surface: POST /mcp is Streamable HTTP in stateless mode with plain JSON responses
 * (no sessions, so GET and DELETE /mcp are 405), and GET /health is the gateway's health report.
 */
export function mcpHttpHandler(deps: McpHttpDeps) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    const { pathname } = new URL(req.url ?? "/", "http://mcp.invalid");

    if (pathname === "/health") {
      if (req.method !== "GET") return sendJson(res, 405, { detail: "Method Not Allowed" }, { Allow: "GET" });
      return sendJson(res, 200, deps.health());
    }
    if (pathname !== "/mcp") return sendJson(res, 404, { detail: "Not Found" });
    if (req.method !== "POST") return sendJson(res, 405, jsonRpcError(SERVER_ERROR, "Method not allowed."), { Allow: "POST" });

    const server = deps.serverFor(req);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_BODY_BYTES,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (err) {
      deps.logError("MCP request failed", err);
      if (!res.headersSent) sendJson(res, 500, jsonRpcError(INTERNAL_ERROR, "Internal server error"));
    }
  };
}
