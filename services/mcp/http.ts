import type { IncomingMessage, ServerResponse } from "node:http";
import { SECURITY_HEADERS } from "../../lib/security-headers";
import { MAX_BODY_BYTES, mcpRequestHeaders, type McpExchangeAnswer, type McpExchangeRequest } from "./exchange";

/** JSON-RPC error codes the HTTP layer answers with itself (the SDK's own choices for the same cases). */
const SERVER_ERROR = -32000;
const INTERNAL_ERROR = -32603;

export interface McpHttpDeps {
  /** Answers one POST /mcp (see exchange.ts). */
  answer: (request: McpExchangeRequest) => Promise<McpExchangeAnswer>;
  /** Given on the MCP server's own port: it then also serves GET /health, and only /mcp besides. */
  health?: () => Record<string, unknown>;
  logError: (message: string, err: unknown) => void;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { ...headers, "Content-Type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

/** The request body as text, or null once it passes `limit` bytes (the rest is not read). */
async function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The MCP HTTP surface, served on the MCP server's own port (with `health`: also GET /health, the gateway's
 * health report) and by the gateway at /mcp: POST is Streamable HTTP in stateless mode with plain JSON responses (no
 * sessions, so GET and DELETE are 405).
 */
export function mcpHttpHandler(deps: McpHttpDeps) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);

    // The MCP server's own port serves /health and /mcp; the gateway routes only /mcp here.
    if (deps.health) {
      const { pathname } = new URL(req.url ?? "/", "http://mcp.invalid");
      if (pathname === "/health") {
        if (req.method !== "GET") return sendJson(res, 405, { detail: "Method Not Allowed" }, { Allow: "GET" });
        return sendJson(res, 200, deps.health());
      }
      if (pathname !== "/mcp") return sendJson(res, 404, { detail: "Not Found" });
    }
    if (req.method !== "POST") return sendJson(res, 405, jsonRpcError(SERVER_ERROR, "Method not allowed."), { Allow: "POST" });

    try {
      const body = await readBody(req, MAX_BODY_BYTES);
      if (body === null) return sendJson(res, 413, jsonRpcError(SERVER_ERROR, `Request body exceeds ${MAX_BODY_BYTES} bytes`));
      const answer = await deps.answer({ headers: mcpRequestHeaders(req.headers), body });
      res.writeHead(answer.status, answer.headers).end(answer.body);
    } catch (err) {
      if (res.headersSent) return void res.end();
      // Through the gateway, a cluster without the mcp service answers 503, like any service that is not running.
      if (/^ServiceNot(Found|Available)Error$/.test((err as Error).name)) return sendJson(res, 503, jsonRpcError(SERVER_ERROR, "The MCP server is not available"));
      deps.logError("MCP request failed", err);
      sendJson(res, 500, jsonRpcError(INTERNAL_ERROR, "Internal server error"));
    }
  };
}
