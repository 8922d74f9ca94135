import * as z from "zod/v4";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { ACCEPTED_CREDENTIALS } from "../../lib/auth/identity";
import { ERRORS } from "../../lib/errors";
import { renderError } from "../../lib/http-errors";
import { sourceListParams } from "../knowledge";
import { documentIdParam, searchDocumentsParams } from "../search";
import { searchFilterSchema, zodShape } from "./params";

/** Tool names: the interface's three, then the knowledge retrieval tools of issue 26 (docs/adr/0054). */
export const TOOL_NAMES = {
  health: "svc_health",
  collectedData: "svc_collected_data",
  collectedDataDelete: "svc_collected_data_delete",
  knowledgeSearch: "svc_knowledge_search",
  knowledgeSources: "svc_knowledge_sources",
  knowledgeDocument: "svc_knowledge_document",
} as const;

const COLLECTED_STATUSES = ["new", "reviewed", "actioned", "archived"] as const;
const DATA_ACTIONS = ["list", "get", "stats"] as const;

/** Ids are positive integers; `minimum: 1` in the JSON Schema says so plainly. */
const id = () => z.int().min(1);

/** svc_collected_data parameters: the interface's table, defaults included (unknown keys are dropped). */
export const collectedDataInput = {
  action: z.enum(DATA_ACTIONS).default("list").describe("list, get or stats"),
  agent_id: id().optional().describe("Filter by agent"),
  entity_id: id().optional().describe("The record to read; required for get"),
  template_name: z
    .string()
    .optional()
    .describe("Data type (template) name, case-insensitive; list only; when no template matches, no template filter is applied"),
  days: id()
    .optional()
    .describe("Relative window in days; for stats omitted means all-time, for list omitted means unfiltered"),
  status: z.enum(COLLECTED_STATUSES).optional().describe("new, reviewed, actioned or archived; list only"),
  search: z.string().optional().describe("Matches attributes, agent name or data type name; list only"),
  skip: z.int().min(0).default(0).describe("list only"),
  limit: z.int().min(1).default(10).describe("list only"),
  group_by_agent: z.boolean().default(false).describe("With stats: per-agent breakdown"),
  include_facets: z.boolean().default(false).describe("With list: adds facets (entity_types, statuses)"),
};

/** svc_collected_data_delete parameters: nothing is deleted until confirmed is true. */
export const collectedDataDeleteInput = {
  entity_ids: z.array(id()).min(1).describe("Records to delete; ids of other accounts are skipped"),
  confirmed: z.boolean().default(false).describe("false: only report what would be deleted; true: delete"),
};

export type CollectedDataArgs = z.output<z.ZodObject<typeof collectedDataInput>>;
export type CollectedDataDeleteArgs = z.output<z.ZodObject<typeof collectedDataDeleteInput>>;

/** Behaviour hints the interface states for each tool; the tools only touch this platform's data (closed world). */
export const TOOL_ANNOTATIONS = {
  readOnly: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  destructive: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
} satisfies Record<string, ToolAnnotations>;

/** One call the tools make as the caller: an action of the entities or knowledge service and its params. */
export interface ServiceCall {
  action: "entities.list" | "entities.get" | "entities.stats" | "entities.deleteMany" | KnowledgeAction;
  params: Record<string, unknown>;
}

/** The knowledge service's REST actions the retrieval tools call: the same validation, scoping and answers. */
export type KnowledgeAction = "knowledge.searchDocuments" | "knowledge.list" | "knowledge.getDocument";

/** Leaves out absent optional parameters, so the entities service applies its own defaults. */
function defined(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
}

/**
 * Maps svc_collected_data onto the entities service (the one place the MCP parameters meet its actions):
 * `get` reads one record and ignores every list-only parameter, `stats` takes the agent and window,
 * `list` takes the filters and paging.
 */
export function collectedDataCall(args: CollectedDataArgs): ServiceCall {
  const { agent_id, days } = args;
  switch (args.action) {
    case "get":
      if (args.entity_id === undefined) {
        throw ERRORS.validation([{ field: "entity_id", message: "entity_id is required when action is get", type: "required" }]);
      }
      return { action: "entities.get", params: { entity_id: args.entity_id } };
    case "stats":
      return { action: "entities.stats", params: defined({ agent_id, days, group_by_agent: args.group_by_agent }) };
    case "list": {
      const { template_name, status, search, skip, limit, include_facets } = args;
      return { action: "entities.list", params: defined({ agent_id, template_name, days, status, search, skip, limit, include_facets }) };
    }
  }
}

/** svc_collected_data_delete maps one to one onto entities.deleteMany. */
export function collectedDataDeleteCall(args: CollectedDataDeleteArgs): ServiceCall {
  return { action: "entities.deleteMany", params: { entity_ids: args.entity_ids, confirmed: args.confirmed } };
}

interface EntityPage {
  data: unknown[];
  pagination: { total: number; skip: number; limit: number };
  facets?: unknown;
}

/** The list result in the tool's shape: pagination is {total, skip, limit}; facets only when asked for. */
export function listResult(page: EntityPage, includeFacets: boolean): Record<string, unknown> {
  const { total, skip, limit } = page.pagination;
  return { data: page.data, pagination: { total, skip, limit }, ...(includeFacets ? { facets: page.facets ?? null } : {}) };
}

/** A successful tool result: the value as structured content plus the same JSON as text for text-only clients. */
export function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

/** A result as it travels in JSON (dates as ISO strings), so it meets its output schema on any transporter. */
export function jsonValue(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

/** Why a data tool refused a call without credentials, phrased so a model can relay it to its user. */
export const AUTH_REQUIRED_MESSAGE = `Authentication required: ${ACCEPTED_CREDENTIALS} with the MCP HTTP request`;

/**
 * A failed tool call as an isError result. The body is the one the REST API would send for the same error
 * (rendered by the gateway's renderError, so 5xx details never leak); the text is its message in one line.
 */
export function errorResult(err: unknown): CallToolResult {
  const { status, body } = renderError(err as Error, { method: "POST" });
  const detail = body.detail;
  const text = Array.isArray(detail)
    ? `Invalid arguments: ${detail.map((item: { loc: unknown[]; msg: string }) => `${item.loc.slice(1).join(".")}: ${item.msg}`).join("; ")}`
    : String(detail);
  return { isError: true, content: [{ type: "text", text }], structuredContent: { status, ...body } };
}

/**
 * A failed call of a tool that declares an output schema: the message only. The SDK client checks any
 * structuredContent against the success schema, error results included, so the REST error body stays out.
 */
export function textErrorResult(err: unknown): CallToolResult {
  const { structuredContent, ...result } = errorResult(err);
  return result;
}

// Knowledge retrieval (issue 26): each tool is one REST action of the knowledge service, called as the caller.

/**
 * svc_knowledge_search parameters: POST /knowledge/documents/search's own (query, mode, source_ids, limit, offset,
 * filters, rerank, rerank_top_n, hybrid_weight), defaults included.
 */
export const knowledgeSearchInput = zodShape(searchDocumentsParams, { filters: searchFilterSchema });
/** svc_knowledge_sources parameters: GET /knowledge's (status, sort_by, sort_order, skip, limit). */
export const knowledgeSourcesInput = zodShape(sourceListParams);
/** svc_knowledge_document parameters: GET /knowledge/documents/{document_id}'s. */
export const knowledgeDocumentInput = zodShape(documentIdParam);

const nullableString = () => z.string().nullable();

/** One search hit, as POST /knowledge/documents/search returns it (further fields pass through). */
const searchHit = z.looseObject({
  id: z.string(),
  document_id: z.string(),
  title: z.string(),
  url: z.string(),
  source_id: z.int(),
  content: z.string(),
  chunk_index: z.int(),
  score: z.number().describe("Raw relevance score"),
  normalized_score: z.number().describe("0 to 100, 100 is the best match"),
});

/** svc_knowledge_search result: the REST search's {results, total, mode_used}. */
export const knowledgeSearchOutput = z.looseObject({
  results: z.array(searchHit),
  total: z.int(),
  mode_used: z.enum(["semantic", "keyword", "hybrid"]).describe("The mode that ranked the results (semantic falls back to keyword without vectors)"),
});

/** One knowledge source, as GET /knowledge lists it (further fields pass through). */
const knowledgeSource = z.looseObject({
  id: z.int(),
  identifier: z.string(),
  name: z.string(),
  description: nullableString(),
  data_type: z.string(),
  paths: z.array(z.string()),
  loading_status: z.enum(["unloaded", "loading", "loaded", "partial", "failed"]),
  loaded_at: nullableString(),
  document_count: z.int(),
  last_indexed_at: nullableString(),
  loading_urls_total: z.int().nullable(),
  loading_urls_done: z.int(),
  loading_error: nullableString(),
  created_at: z.string(),
});

/** svc_knowledge_sources result: the REST list's page, {data, pagination: {total, skip, limit, has_more}}. */
export const knowledgeSourcesOutput = z.looseObject({
  data: z.array(knowledgeSource),
  pagination: z.object({ total: z.int(), skip: z.int(), limit: z.int(), has_more: z.boolean() }),
});

/** svc_knowledge_document result: GET /knowledge/documents/{document_id}'s DocumentDetail (further fields pass through). */
export const knowledgeDocumentOutput = z.looseObject({
  id: z.string(),
  title: z.string(),
  url: z.string(),
  source_id: z.int(),
  content: z.string().describe("The full text"),
  metadata: z.record(z.string(), z.unknown()),
  indexed_at: nullableString(),
});

/** The knowledge action behind each retrieval tool; the arguments are its params as they are. */
export function knowledgeCall(action: KnowledgeAction, args: Record<string, unknown>): ServiceCall {
  return { action, params: defined(args) };
}
