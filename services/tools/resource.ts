import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";

/** Account tools agents can use. Deleting a tool leaves agents' references in place, as the interface specifies. */
export const tools = defineResource({
  name: "Tool",
  collection: "tools",
  // The list is newest first.
  storage: { name: "Tool", named: true, minimize: false, indexes: [[{ account_id: 1, created_at: -1, _id: -1 }]] },
  path: "/tools",
  idParam: "tool_id",
  identifier: true,
  event: "tool",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: { ...identifierRule, optional: false } },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    // Lower case, as team push takes types (mcp, external, function): a tool of type "MCP" made its team's pull a 500.
    tool_type: {
      write: { type: "string", min: 1, max: 50, trim: true, lowercase: true, optional: true, description: "Kind of tool, e.g. function, api or mcp; stored lower case" },
      store: stored.string({ default: "function" }),
    },
    configuration: { write: freeJsonRule({ type: "object", optional: true }), store: stored.json({ default: () => ({}) }) },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** The tools model on a given connection. */
export const toolModel = tools.model;
export type ToolRecord = typeof tools.types.record;
