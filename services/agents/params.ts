import { freeJsonRule } from "../../lib/free-json";
import { identifierRule } from "../../lib/ids";
import { ACCESS_LEVEL_VALUES, MAX_SUGGESTED_PROMPTS } from "./rules";

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

/** AgentCreate body; AgentUpdate is the same with every field optional. */
export const agentFields = {
  name: { type: "string", min: 1, max: 255, trim: true },
  identifier: identifierRule,
  description: text(10_000),
  instructions: text(100_000),
  model: { type: "string", min: 1, max: 200, trim: true, optional: true },
  temperature: { type: "number", min: 0, max: 2, optional: true },
  max_tokens: { type: "number", integer: true, positive: true, optional: true, nullable: true },
  access_level: { type: "enum", values: ACCESS_LEVEL_VALUES, optional: true },
  image_url: { type: "string", max: 2048, optional: true, nullable: true },
  configuration: freeJsonRule({ type: "object", optional: true, props: { chat_ui: chatUiRule } }),
  traits: refList,
  tools: refList,
  knowledge_sources: refList,
} as const;

export const agentUpdateFields = { ...agentFields, name: { ...agentFields.name, optional: true } } as const;

/** Path parameter that takes a numeric id or an identifier. */
export const agentRefParam = { agent_id_or_identifier: { type: "string", min: 1, max: 100 } } as const;

export type AgentParams = {
  name?: string;
  identifier?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string;
  temperature?: number;
  max_tokens?: number | null;
  access_level?: string;
  image_url?: string | null;
  configuration?: Record<string, unknown>;
  traits?: (string | number)[];
  tools?: (string | number)[];
  knowledge_sources?: (string | number)[];
};
