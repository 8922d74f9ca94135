import http from "node:http";
import type { ServiceSchema } from "moleculer";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { identityResolver, SESSION_CHANGED_EVENT, type Identity, type IdentityResolver } from "../../lib/auth/identity";
import { configOf, type Config } from "../../lib/config";
import { healthReport, VERSION } from "../../lib/health";
import { asAccount, type Ctx } from "../../lib/meta";
import { answerMcpRequest, MAX_BODY_BYTES, type McpExchangeRequest } from "./exchange";
import { mcpHttpHandler } from "./http";
import { buildMcpServer } from "./server";
import type { ServiceCall } from "./tools";

interface Methods {
  serverFor(headers: Record<string, string>): McpServer;
}

interface Vars {
  config: Config;
  resolveIdentity: IdentityResolver;
  server: http.Server;
}

/**
 * The MCP server: its own HTTP listener (MCP_HOST:MCP_PORT) with the three tools of the interface and the
 * knowledge retrieval tools, and the `handle` action behind the gateway's /mcp route. Data tools resolve the
 * caller the way the gateway does (lib/auth/identity) and call the entities or knowledge service as that caller
 * over the transporter.
 */
const McpService: ServiceSchema<Record<string, never>, Methods, Vars> = {
  name: "mcp",

  actions: {
    /** One POST /mcp received by the gateway (its /mcp route), answered here as plain data. */
    handle: {
      visibility: "public",
      params: {
        headers: { type: "record", key: { type: "string" }, value: { type: "string" } },
        body: { type: "string", max: MAX_BODY_BYTES },
      },
      handler(ctx: Ctx<McpExchangeRequest>) {
        return answerMcpRequest(this.serverFor(ctx.params.headers), ctx.params);
      },
    },
  },

  events: {
    /** A user changed: their next request re-reads their session (a deleted or disabled user is refused). */
    [SESSION_CHANGED_EVENT]() {
      this.resolveIdentity.forgetSessions();
    },
  },

  methods: {
    /** One MCP server per HTTP request; the caller is resolved at most once, when a data tool first needs it. */
    serverFor(headers: Record<string, string>) {
      let identity: Promise<Identity | null> | undefined;
      return buildMcpServer({
        serverName: this.config.serverName,
        version: VERSION,
        health: () => healthReport(this.config),
        identity: () => (identity ??= this.resolveIdentity(headers, this.broker)),
        callAs: ({ action, params }: ServiceCall, caller: Identity) => this.broker.call(action, params, asAccount(caller.accountId!, caller)),
      });
    },
  },

  created() {
    this.config = configOf(this);
    this.resolveIdentity = identityResolver(this.config);
  },

  async started() {
    const { port, host } = this.config.mcp;
    const handler = mcpHttpHandler({
      answer: (request) => answerMcpRequest(this.serverFor(request.headers), request),
      health: () => healthReport(this.config),
      logError: (message, err) => this.logger.error(message, err),
    });
    this.server = http.createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => resolve());
    });
    this.logger.info(`MCP server listening on ${host}:${(this.server.address() as { port: number }).port}`);
  },

  async stopped() {
    if (!this.server) return;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  },
};

export default McpService;
