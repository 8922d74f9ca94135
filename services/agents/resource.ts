import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { AGENT_ACCESS_LEVELS, agentModel } from "./model";
import { accessLevelRule, MAX_SUGGESTED_PROMPTS } from "./rules";

const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;
const refList = {
  type: "array",
  optional: true,
  max: 100,
  items: { type: "multi", rules: [{ type: "number", integer: true, positive: true }, { type: "string", min: 1, max: 100 }] },
} as const;

/** configuration.chat_ui as the interface defines it; other configuration keys are free-form. */
export const chatUiRule = {
  type: "object",
  optional: true,
  nullable: true,
  props: {
    empty_title: text(500),
    empty_description: text(2000),
    greeting: text(2000),
    suggested_prompts: {
      type: "array",
      optional: true,
      nullable: true,
      max: MAX_SUGGESTED_PROMPTS,
      items: {
        type: "object",
        props: {
          icon: { type: "string", max: 100, optional: true, nullable: true },
          title: { type: "string", min: 1, max: 200 },
          text: { type: "string", min: 1, max: 2000 },
        },
      },
    },
  },
} as const;

const refs = <P extends Record<string, { type: string }>>(props: P) =>
  ({
    type: "array",
    items: { type: "object", props: { id: { type: "number", integer: true }, identifier: { type: "string" }, name: { type: "string" }, ...props } },
  }) as const;
const objects = { type: "array", items: { type: "object" } } as const;

/**
 * Agents, addressed by id or identifier. Associations are written as lists of ids or identifiers and read back
 * resolved (services/agents/render.ts); the publication is set by team push and shown without its password.
 */
export const agents = defineResource({
  name: "Agent",
  collection: "agents",
  model: agentModel,
  path: "/agents",
  idParam: "agent_id_or_identifier",
  byRef: true,
  identifier: true,
  event: "agent",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    description: { write: text(10_000) },
    instructions: { write: text(100_000) },
    model: { write: { type: "string", min: 1, max: 200, trim: true, optional: true } },
    temperature: { write: { type: "number", min: 0, max: 2, optional: true } },
    max_tokens: { write: { type: "number", integer: true, positive: true, optional: true, nullable: true } },
    access_level: { write: accessLevelRule, read: { type: "enum", values: AGENT_ACCESS_LEVELS } },
    image_url: { write: { type: "string", max: 2048, optional: true, nullable: true } },
    configuration: { write: freeJsonRule({ type: "object", optional: true, props: { chat_ui: chatUiRule } }), read: { type: "object" } },
    traits: { write: refList, read: refs({ category: { type: "string" } }) },
    tools: { write: refList, read: refs({ tool_type: { type: "string" } }) },
    knowledge_sources: { write: refList, read: refs({}) },
    publication: {
      read: {
        type: "object",
        nullable: true,
        props: {
          access_level: { type: "enum", values: AGENT_ACCESS_LEVELS },
          chat_uri: { type: "string", optional: true, nullable: true },
          domain: { type: "string", optional: true, nullable: true },
          has_password: { type: "boolean" },
        },
      },
    },
    events: { read: objects },
    delegations: { read: objects },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});

export type AgentParams = typeof agents.types.update;
