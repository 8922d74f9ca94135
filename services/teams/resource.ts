import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource, viewRule } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { agents } from "../agents";
import { accessLevelRule, TEAM_ACCESS_LEVELS, type KnowledgeConfig } from "./model";

/** Teams of agents, read with their agents; the access password is written only, and stored hashed. */
export const teams = defineResource({
  name: "Team",
  collection: "teams",
  storage: {
    name: "Team",
    named: true,
    minimize: false,
    indexes: [
      // Anonymous reads of public and password-protected teams by identifier.
      [{ identifier: 1, access_level: 1 }],
      // Team push finds the team by name, the oldest first.
      [{ account_id: 1, name: 1, _id: 1 }],
    ],
  },
  path: "/teams",
  idParam: "team_id_or_identifier",
  byRef: true,
  identifier: true,
  event: "team",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    access_level: {
      write: accessLevelRule,
      read: { type: "enum", values: TEAM_ACCESS_LEVELS },
      store: stored.string({ enum: TEAM_ACCESS_LEVELS, default: "PRIVATE" }),
    },
    // Length is checked by the handler: the interface answers 400, not 422, for a bad team password.
    access_password: { write: { type: "string", max: 128, optional: true }, read: false },
    access_password_hash: { read: false, store: stored.string({ default: null }) },
    image_url: { write: { type: "string", max: 2048, optional: true, nullable: true }, store: stored.string({ default: null }) },
    configuration: { write: freeJsonRule({ type: "object", optional: true }), store: stored.json({ default: () => ({}) }) },
    agent_ids: {
      write: { type: "array", max: 200, optional: true, items: { type: "number", integer: true, positive: true } },
      store: stored.ints({ ref: "agents" }),
    },
    // What a push declared for the team, kept so pull can return it.
    tool_ids: { read: false, store: stored.ints({ ref: "tools" }) },
    knowledge: { read: false, store: stored.json<KnowledgeConfig[]>({ default: () => [] }) },
    agents: { read: { type: "array", items: viewRule(agents.view) } },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});

/** The teams model on a given connection. */
export const teamModel = teams.model;
export type TeamRecord = typeof teams.types.record;
