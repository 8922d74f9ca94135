import Validator from "fastest-validator";
import type { FieldProblem } from "../../lib/errors";
import { freeJsonRule } from "../../lib/free-json";
import { PLATFORM_VALIDATOR_OPTIONS } from "../../lib/validator";
import { chatUiRule } from "../agents";

/** Tool types a team configuration may declare. */
export const CONFIG_TOOL_TYPES = ["mcp", "external", "function"] as const;
const PUBLICATION_LEVELS = ["public", "private", "password_protected"];

const str = (max: number, optional = true) => ({ type: "string", max, optional }) as const;
/**
 * A free-form object of the document (tool config, event config, knowledge processing, overrides). A new rule
 * object each time: fastest-validator compiles a rule object met twice as a cycle, without its custom check.
 */
const obj = () => freeJsonRule({ type: "object", optional: true } as const);

/** The team configuration document (push body, pull result), as the interface defines it. */
export const documentSchema = {
  $$root: true,
  type: "object",
  props: {
    name: { type: "string", min: 1, max: 255 },
    // null clears the description of the team, a tool or a trait (absent keeps it), as it does an agent's.
    description: { ...str(10_000), nullable: true },
    agents: {
      type: "array",
      optional: true,
      max: 200,
      items: {
        type: "object",
        props: {
          name: { type: "string", min: 1, max: 255 },
          // null clears these on an existing agent (as REST's update does); absent keeps them.
          description: { ...str(10_000), nullable: true },
          system_prompt: { ...str(100_000), nullable: true },
          model: { type: "string", min: 1, max: 200 },
          temperature: { type: "number", min: 0, max: 2, optional: true },
          max_tokens: { type: "number", integer: true, positive: true, optional: true, nullable: true },
          image_url: { ...str(2048), nullable: true },
          publication: {
            type: "object",
            optional: true,
            props: {
              access_level: { type: "enum", values: PUBLICATION_LEVELS },
              chat_uri: { type: "string", min: 1, max: 200, pattern: "^[A-Za-z0-9][A-Za-z0-9_-]*$", optional: true },
              domain: { type: "string", min: 1, max: 253, optional: true },
              password: { type: "string", min: 8, max: 128, optional: true },
            },
          },
          configuration: freeJsonRule({ type: "object", optional: true, props: { chat_ui: chatUiRule } }),
          events: {
            type: "array",
            optional: true,
            items: {
              type: "object",
              props: { type: { type: "string", min: 1, max: 100 }, description: str(2000), enabled: { type: "boolean", optional: true }, config: obj() },
            },
          },
          traits: { type: "array", optional: true, items: { type: "string", min: 1, max: 100 } },
          delegations: {
            type: "array",
            optional: true,
            items: { type: "object", props: { to_agent: { type: "string", min: 1, max: 255 }, condition: str(2000), description: str(2000) } },
          },
        },
      },
    },
    tools: {
      type: "array",
      optional: true,
      max: 200,
      items: {
        type: "object",
        props: { name: { type: "string", min: 1, max: 255 }, description: { ...str(10_000), nullable: true }, type: { type: "enum", values: [...CONFIG_TOOL_TYPES] }, config: { ...obj(), nullable: true } },
      },
    },
    knowledge: {
      type: "array",
      optional: true,
      max: 200,
      items: {
        type: "object",
        props: {
          name: { type: "string", min: 1, max: 255 },
          description: str(10_000),
          type: { type: "string", min: 1, max: 50 },
          source: { type: "string", min: 1, max: 4096 },
          processing: obj(),
        },
      },
    },
    traits: {
      type: "array",
      optional: true,
      max: 200,
      items: {
        type: "object",
        props: {
          name: { type: "string", min: 1, max: 255 },
          category: { ...str(100), nullable: true },
          description: { ...str(10_000), nullable: true },
          tags: { type: "array", optional: true, nullable: true, items: "string" },
        },
      },
    },
    overrides: {
      type: "object",
      optional: true,
      props: { global: obj(), agent_specific: { type: "record", optional: true, key: { type: "string" }, value: freeJsonRule({ type: "object" }) } },
    },
    filters: {
      type: "object",
      optional: true,
      props: {
        include_components: { type: "array", optional: true, items: "string" },
        exclude_components: { type: "array", optional: true, items: "string" },
        agent_filters: {
          type: "object",
          optional: true,
          props: { include_traits: { type: "array", optional: true, items: "string" }, exclude_traits: { type: "array", optional: true, items: "string" } },
        },
      },
    },
  },
};

/**
 * A rule whose objects defined field by field refuse unknown fields (`strict`); free-form ones (with the free-form
 * `custom` check: config, processing, configuration, overrides.global) take any. Copies: the original stays lenient.
 */
function strictRule(rule: unknown): unknown {
  if (!rule || typeof rule !== "object" || Array.isArray(rule)) return rule;
  const r = rule as Record<string, unknown>;
  if (r.custom) return { ...r };
  const props = r.type === "object" && r.props ? Object.fromEntries(Object.entries(r.props).map(([key, inner]) => [key, strictRule(inner)])) : undefined;
  return { ...r, ...(props ? { props, strict: true } : {}), ...(r.type === "array" && r.items ? { items: strictRule(r.items) } : {}) };
}

const validator = () => new Validator({ haltOnFirstError: false, ...PLATFORM_VALIDATOR_OPTIONS });
const check = validator().compile(documentSchema);
/** The document push reads: unknown fields refused outside the free-form parts (the OpenAPI push body says so too). */
export const pushDocumentSchema = strictRule(documentSchema) as typeof documentSchema;
const checkStrict = validator().compile(pushDocumentSchema);

/**
 * Structural problems of a configuration document; empty when it is well formed. `strict`: an unknown field is
 * one too (push reads a client's document so; pull checks what it built from teams pushed before that, leniently).
 */
export function documentProblems(doc: unknown, { strict = false } = {}): FieldProblem[] {
  const result = (strict ? checkStrict : check)(doc);
  if (result === true) return [];
  return (result as { field?: string; message?: string; type: string }[]).map((e) => ({
    field: e.field ?? "",
    message: e.message ?? e.type,
    type: e.type,
  }));
}
