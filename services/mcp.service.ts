import http, { type IncomingMessage } from "node:http";
import type { ServiceSchema } from "moleculer";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { identityResolver, type Identity, type IdentityResolver } from "../lib/auth/identity";
import { loadConfig, type Config } from "../lib/config";
import { healthReport, VERSION } from "../lib/health";
import { loadMcpConfig } from "./mcp/config";
import { mcpHttpHandler } from "./mcp/http";
import { buildMcpServer } from "./mcp/server";
import type { EntitiesCall } from "./mcp/tools";

interface Methods {
  serverFor(req: IncomingMessage): McpServer;
}

interface Vars {
  config: Config;
  resolveIdentity: IdentityResolver;
  server: http.Server;
}

/**
 * The MCP server: its own HTTP listener (MCP_HOST:MCP_PORT) with the three tools of the interface. Data tools
 * resolve the caller the way the gateway does (lib/auth/identity) and call the entities service as that
 * caller over the transporter.
 */
const McpService: ServiceSchema<Record<string, never>, Methods, Vars> = {
  name: "mcp",

  methods: {
    /** One MCP server per HTTP request; the caller is resolved at most once, when a data tool first needs it. */
    serverFor(req: IncomingMessage) {
      let identity: Promise<Identity | null> | undefined;
      return buildMcpServer({
        serverName: this.config.serverName,
        version: VERSION,
        health: () => healthReport(this.config),
        identity: () => (identity ??= this.resolveIdentity(req.headers, this.broker)),
        callEntities: ({ action, params }: EntitiesCall, caller: Identity) => this.broker.call(action, params, { meta: caller }),
      });
    },
  },

  created() {
    this.config = loadConfig();
    this.resolveIdentity = identityResolver(this.config);
  },

  async started() {
    const { port, host } = loadMcpConfig();
    const handler = mcpHttpHandler({
      serverFor: (req) => this.serverFor(req),
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
