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
  jsonValue,
  knowledgeCall,
  knowledgeDocumentInput,
  knowledgeDocumentOutput,
  knowledgeSearchInput,
  knowledgeSearchOutput,
  knowledgeSourcesInput,
  knowledgeSourcesOutput,
  listResult,
  textErrorResult,
  type KnowledgeAction,
  type ServiceCall,
} from "./tools";

/** What one MCP server instance (one HTTP request) needs from its surroundings. */
export interface McpRequestScope {
  serverName: string;
  version: string;
  health: () => Record<string, unknown>;
  /** The caller of this HTTP request, resolved at most once; null without credentials, throws for bad ones. */
  identity: () => Promise<Identity | null>;
  /** Calls the entities or knowledge service as the caller (its account scopes the call). */
  callAs: (call: ServiceCall, identity: Identity) => Promise<any>;
}

/**
 * Builds the MCP server for one stateless HTTP request (the SDK's stateless Streamable HTTP pattern).
 * svc_health and the handshake need no credentials; the data tools answer an isError result without them.
 * The knowledge tools (docs/adr/0054-mcp-retrieval-tools.md) are read-only and each answers as its REST route.
 */
export function buildMcpServer(scope: McpRequestScope): McpServer {
  const server = new McpServer({ name: scope.serverName, version: scope.version });

  /** Runs a data tool as the caller; every failure (credentials included) becomes an isError result. */
  const asCaller = async (run: (identity: Identity) => Promise<Record<string, unknown>>, failed = errorResult): Promise<CallToolResult> => {
    try {
      const identity = await scope.identity();
      if (!identity) throw ERRORS.unauthorized(AUTH_REQUIRED_MESSAGE);
      return jsonResult(await run(identity));
    } catch (err) {
      return failed(err);
    }
  };
  /** A knowledge tool: its REST action as the caller, the answer as JSON; errors as text (it has an output schema). */
  const knowledge = (action: KnowledgeAction) => (args: Record<string, unknown>) =>
    asCaller(async (identity) => jsonValue(await scope.callAs(knowledgeCall(action, args), identity)), textErrorResult);

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
        const page = await scope.callAs(collectedDataCall(args), identity);
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
    (args) => asCaller((identity) => scope.callAs(collectedDataDeleteCall(args), identity)),
  );

  server.registerTool(
    TOOL_NAMES.knowledgeSearch,
    {
      title: "Search knowledge",
      description:
        "Searches the account's knowledge documents by query: mode keyword (text matching), semantic (vector similarity) " +
        "or hybrid (both, the default); source_ids keeps the given knowledge sources; filters keeps chunks whose document metadata, " +
        "source_id, document_id or indexed_at match ({type: eq|ne|gt|gte|lt|lte|in|nin, key: 'metadata.<name>' or a built-in key, value} " +
        "or {type: and|or, filters: [...]}), applied before ranking; limit and offset page. " +
        "Returns {results, total, mode_used}, as POST /api/v1/knowledge/documents/search; read a hit in full with svc_knowledge_document.",
      inputSchema: knowledgeSearchInput,
      outputSchema: knowledgeSearchOutput,
      annotations: TOOL_ANNOTATIONS.readOnly,
    },
    knowledge("knowledge.searchDocuments"),
  );

  server.registerTool(
    TOOL_NAMES.knowledgeSources,
    {
      title: "Knowledge sources",
      description:
        "Lists the account's knowledge sources with their loading status and document count (status filters; " +
        "sort_by, sort_order, skip and limit page). Returns {data, pagination}, as GET /api/v1/knowledge.",
      inputSchema: knowledgeSourcesInput,
      outputSchema: knowledgeSourcesOutput,
      annotations: TOOL_ANNOTATIONS.readOnly,
    },
    knowledge("knowledge.list"),
  );

  server.registerTool(
    TOOL_NAMES.knowledgeDocument,
    {
      title: "Knowledge document",
      description:
        "Reads one knowledge document with its full content and metadata, by the document id a search or list gave. " +
        "Returns the document, as GET /api/v1/knowledge/documents/{document_id}; not found when it is not the account's.",
      inputSchema: knowledgeDocumentInput,
      outputSchema: knowledgeDocumentOutput,
      annotations: TOOL_ANNOTATIONS.readOnly,
    },
    knowledge("knowledge.getDocument"),
  );

  return server;
}
