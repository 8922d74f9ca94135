import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource, viewRule } from "../../lib/resource";
import { agents } from "../agents";
import { TEAM_ACCESS_LEVELS, teamModel } from "./model";
import { accessLevelRule } from "./rules";

/** Teams of agents, read with their agents; the access password is written only, and stored hashed. */
export const teams = defineResource({
  name: "Team",
  collection: "teams",
  model: teamModel,
  path: "/teams",
  idParam: "team_id_or_identifier",
  byRef: true,
  identifier: true,
  event: "team",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    access_level: { write: accessLevelRule, read: { type: "enum", values: TEAM_ACCESS_LEVELS } },
    // Length is checked by the handler: the interface answers 400, not 422, for a bad team password.
    access_password: { write: { type: "string", max: 128, optional: true }, read: false },
    image_url: { write: { type: "string", max: 2048, optional: true, nullable: true } },
    configuration: { write: freeJsonRule({ type: "object", optional: true }) },
    agent_ids: { write: { type: "array", max: 200, optional: true, items: { type: "number", integer: true, positive: true } } },
    agents: { read: { type: "array", items: viewRule(agents.view) } },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});
