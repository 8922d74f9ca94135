import * as z from "zod/v4";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { ACCEPTED_CREDENTIALS } from "../../lib/auth/identity";
import { ERRORS } from "../../lib/errors";
import { renderError } from "../../lib/http-errors";

/** Tool names, exactly as the interface lists them. */
export const TOOL_NAMES = {
  health: "svc_health",
  collectedData: "svc_collected_data",
  collectedDataDelete: "svc_collected_data_delete",
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

/** One call of the entities service: the action and its params. */
export interface EntitiesCall {
  action: "entities.list" | "entities.get" | "entities.stats" | "entities.deleteMany";
  params: Record<string, unknown>;
}

/** Leaves out absent optional parameters, so the entities service applies its own defaults. */
function defined(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
}

/**
 * Maps svc_collected_data onto the entities service (the one place the MCP parameters meet its actions):
 * `get` reads one record and ignores every list-only parameter, `stats` takes the agent and window,
 * `list` takes the filters and paging.
 */
export function collectedDataCall(args: CollectedDataArgs): EntitiesCall {
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
export function collectedDataDeleteCall(args: CollectedDataDeleteArgs): EntitiesCall {
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
