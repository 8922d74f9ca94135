import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Identity } from "../../lib/auth/identity";
import { ERRORS } from "../../lib/errors";
import {
  AUTH_REQUIRED_MESSAGE,
  TOOL_ANNOTATIONS,
  TOOL_NAMES,
  collectedDataCall,
  collectedDataDeleteCall,
  collectedDataDeleteInput,
  collectedDataInput,
  errorResult,
  jsonResult,
  listResult,
  type EntitiesCall,
} from "./tools";

/** What one MCP server instance (one HTTP request) needs from its surroundings. */
export interface McpRequestScope {
  serverName: string;
  version: string;
  health: () => Record<string, unknown>;
  /** The caller of this HTTP request, resolved at most once; null without credentials, throws for bad ones. */
  identity: () => Promise<Identity | null>;
  /** Calls the entities service as the caller. */
  callEntities: (call: EntitiesCall, identity: Identity) => Promise<any>;
}

/**
 * Builds the MCP server for one stateless HTTP request (the SDK's stateless Streamable HTTP pattern).
 * svc_health and the handshake need no credentials; the data tools answer an isError result without them.
 */
export function buildMcpServer(scope: McpRequestScope): McpServer {
  const server = new McpServer({ name: scope.serverName, version: scope.version });

  /** Runs a data tool as the caller; every failure (credentials included) becomes an isError result. */
  const asCaller = async (run: (identity: Identity) => Promise<Record<string, unknown>>): Promise<CallToolResult> => {
    try {
      const identity = await scope.identity();
      if (!identity) throw ERRORS.unauthorized(AUTH_REQUIRED_MESSAGE);
      return jsonResult(await run(identity));
    } catch (err) {
      return errorResult(err);
    }
  };

  server.registerTool(
    TOOL_NAMES.health,
    {
      title: "Health",
      description: "Reports that the service is up: status, server name, version and API address. Needs no credentials.",
      annotations: TOOL_ANNOTATIONS.readOnly,
    },
    () => jsonResult(scope.health()),
  );

  server.registerTool(
    TOOL_NAMES.collectedData,
    {
      title: "Collected data",
      description:
        "Reads the records agents extracted from conversations: action list (filters, paging, optional facets), " +
        "get (one record with provenance and session excerpt; needs entity_id) or stats (counts, optionally per agent).",
      inputSchema: collectedDataInput,
      annotations: TOOL_ANNOTATIONS.readOnly,
    },
    (args) =>
      asCaller(async (identity) => {
        const page = await scope.callEntities(collectedDataCall(args), identity);
        return args.action === "list" ? listResult(page, args.include_facets) : page;
      }),
  );

  server.registerTool(
    TOOL_NAMES.collectedDataDelete,
    {
      title: "Delete collected data",
      description:
        "Deletes collected data records. With confirmed false (the default) nothing is deleted and the answer says " +
        "how many would be; call again with confirmed true to delete. Ids of other accounts are skipped.",
      inputSchema: collectedDataDeleteInput,
      annotations: TOOL_ANNOTATIONS.destructive,
    },
    (args) => asCaller((identity) => scope.callEntities(collectedDataDeleteCall(args), identity)),
  );

  return server;
}
