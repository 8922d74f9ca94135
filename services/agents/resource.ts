import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { accessLevelRule, AGENT_ACCESS_LEVELS, MAX_SUGGESTED_PROMPTS, type Publication } from "./model";

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
  storage: { name: "Agent", named: true, minimize: false },
  path: "/agents",
  idParam: "agent_id_or_identifier",
  byRef: true,
  identifier: true,
  routeWords: ["directory"],
  event: "agent",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    description: { write: text(10_000) },
    instructions: { write: text(100_000), store: stored.string({ default: null }) },
    model: { write: { type: "string", min: 1, max: 200, trim: true, optional: true }, store: stored.string({ required: true }) },
    temperature: { write: { type: "number", min: 0, max: 2, optional: true }, store: stored.number({ default: 0.7 }) },
    max_tokens: { write: { type: "number", integer: true, positive: true, optional: true, nullable: true }, store: stored.number({ default: null }) },
    access_level: {
      write: accessLevelRule,
      read: { type: "enum", values: AGENT_ACCESS_LEVELS },
      store: stored.string({ enum: AGENT_ACCESS_LEVELS, default: "private" }),
    },
    image_url: { write: { type: "string", max: 2048, optional: true, nullable: true }, store: stored.string({ default: null }) },
    configuration: {
      write: freeJsonRule({ type: "object", optional: true, props: { chat_ui: chatUiRule } }),
      read: { type: "object" },
      store: stored.json({ default: () => ({}) }),
    },
    // Stored as ids, shown resolved (render.ts) as `traits`, `tools` and `knowledge_sources`.
    trait_ids: { read: false, store: stored.ints({ ref: "traits" }) },
    tool_ids: { read: false, store: stored.ints({ ref: "tools" }) },
    knowledge_source_ids: { read: false, store: stored.ints({ ref: "knowledge_sources" }) },
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
      store: stored.json<Publication>({ default: null }),
    },
    events: { read: objects, store: stored.json<Record<string, unknown>[]>({ default: () => [] }) },
    delegations: { read: objects, store: stored.json<Record<string, unknown>[]>({ default: () => [] }) },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});

export type AgentParams = typeof agents.types.update;

/** The agents model on a given connection. */
export const agentModel = agents.model;
export type AgentRecord = typeof agents.types.record;
