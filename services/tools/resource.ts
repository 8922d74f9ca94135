import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { toolModel } from "./model";

/** Account tools agents can use. Deleting a tool leaves agents' references in place, as the interface specifies. */
export const tools = defineResource({
  name: "Tool",
  collection: "tools",
  model: toolModel,
  path: "/tools",
  idParam: "tool_id",
  identifier: true,
  event: "tool",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: { ...identifierRule, optional: false } },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    tool_type: { write: { type: "string", min: 1, max: 50, trim: true, optional: true } },
    configuration: { write: freeJsonRule({ type: "object", optional: true }) },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});
