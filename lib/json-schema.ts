/**
 * JSON Schema (2020-12, as OpenAPI 3.1 uses) from fastest-validator rules: the request schemas of the OpenAPI
 * document and the response schemas of resource declarations (lib/resource.ts) both come from here.
 */

export type JsonSchema = Record<string, unknown>;

/** fastest-validator shorthand ("number|optional") or a rule object, as an object. */
function ruleObject(rule: unknown): Record<string, unknown> {
  if (typeof rule === "string") {
    const [type, ...flags] = rule.split("|");
    return Object.fromEntries([["type", type], ...flags.map((f) => [f.trim(), true])]);
  }
  if (Array.isArray(rule)) return { type: "multi", rules: rule };
  return (rule ?? { type: "any" }) as Record<string, unknown>;
}

/** Canonical base64, which fastest-validator's `base64` strings accept (its own pattern also takes a backslash). */
const BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/** JSON Schema (2020-12, as OpenAPI 3.1 uses) for one fastest-validator rule. */
export function ruleToSchema(rule: unknown): JsonSchema {
  const r = ruleObject(rule);
  let schema: JsonSchema;
  // A rule a fastest-validator type cannot describe (a recursive grammar, checked by its own function) names its schema.
  switch (r.jsonSchema ? "named" : r.type) {
    case "named":
      schema = { ...(r.jsonSchema as JsonSchema) };
      break;
    case "number":
      schema = { type: r.integer ? "integer" : "number" };
      if (typeof r.min === "number") schema.minimum = r.min;
      if (typeof r.max === "number") schema.maximum = r.max;
      if (r.positive) schema.exclusiveMinimum = 0;
      break;
    case "string":
      schema = { type: "string" };
      if (typeof r.min === "number") schema.minLength = r.min;
      if (typeof r.max === "number") schema.maxLength = r.max;
      if (typeof r.length === "number") schema.minLength = schema.maxLength = r.length;
      if (typeof r.pattern === "string") schema.pattern = r.pattern;
      if (r.base64 === true) Object.assign(schema, { contentEncoding: "base64", pattern: BASE64_PATTERN });
      if (Array.isArray(r.enum)) schema.enum = r.enum;
      // An enum the validator folds to one case: the document lists that case only (generators read values
      // that differ only in case as duplicates), and says that any case is accepted.
      if (Array.isArray(r.enum) && (r.lowercase || r.uppercase)) schema.description = `Any letter case is accepted; stored and returned in ${r.lowercase ? "lower" : "upper"} case.`;
      break;
    case "email":
      schema = { type: "string", format: "email" };
      break;
    case "url":
      // fastest-validator's url rule takes http(s) addresses only, which "uri" alone does not say.
      schema = { type: "string", format: "uri", pattern: "^https?://\\S+" };
      break;
    case "uuid":
      schema = { type: "string", format: "uuid" };
      break;
    case "date":
      schema = { type: "string", format: "date-time" };
      break;
    case "boolean":
      schema = { type: "boolean" };
      break;
    case "enum":
      schema = { enum: r.values };
      break;
    case "equal":
      schema = { const: r.value };
      break;
    case "array":
      schema = { type: "array", ...(r.items ? { items: ruleToSchema(r.items) } : {}) };
      if (typeof r.min === "number") schema.minItems = r.min;
      if (typeof r.max === "number") schema.maxItems = r.max;
      if (r.unique === true) schema.uniqueItems = true;
      break;
    case "object":
      // Said explicitly either way: generators read an object without additionalProperties as an empty one.
      // fastest-validator keeps keys an object rule does not list unless the rule is strict.
      schema = {
        ...(r.props || r.properties ? objectSchema((r.props ?? r.properties) as Record<string, unknown>) : { type: "object" }),
        additionalProperties: r.strict === true ? false : true,
      };
      break;
    case "record":
      schema = { type: "object", ...(r.key ? { propertyNames: ruleToSchema(r.key) } : {}), additionalProperties: r.value ? ruleToSchema(r.value) : true };
      break;
    case "multi":
      schema = { anyOf: (r.rules as unknown[]).map(ruleToSchema) };
      break;
    default:
      schema = {};
  }
  if (typeof r.description === "string") schema.description = r.description;
  if (r.default !== undefined && typeof r.default !== "function") schema.default = r.default;
  if (r.nullable) schema = typeof schema.type === "string" ? { ...schema, type: [schema.type, "null"] } : { anyOf: [schema, { type: "null" }] };
  return schema;
}

export function isOptional(rule: unknown): boolean {
  const r = ruleObject(rule);
  return Boolean(r.optional) || r.default !== undefined;
}

/** An object schema from a params map: properties, and required for every rule neither optional nor defaulted. */
export function objectSchema(params: Record<string, unknown>): JsonSchema {
  const entries = Object.entries(params).filter(([key]) => !key.startsWith("$"));
  const required = entries.filter(([, rule]) => !isOptional(rule)).map(([key]) => key);
  return {
    type: "object",
    properties: Object.fromEntries(entries.map(([key, rule]) => [key, ruleToSchema(rule)])),
    ...(required.length ? { required } : {}),
    ...(params.$$strict === true ? { additionalProperties: false } : {}),
  };
}


/** Keywords that constrain what a client may send, not what a stored record holds. */
const REQUEST_ONLY = new Set(["minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "pattern", "default", "minItems", "maxItems", "uniqueItems"]);

/**
 * The schema of a value as responses carry it, from the rule that validates (or describes) it: its types, enums,
 * nullability and nested properties (required where the rule is neither optional nor defaulted: always present),
 * without the limits a request must respect (records written before a limit changed still read back). Nested
 * objects keep their listed properties and allow more unless their rule is strict.
 */
export function valueSchema(rule: unknown): JsonSchema {
  const strip = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(strip);
    if (!schema || typeof schema !== "object") return schema;
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(schema as JsonSchema)) {
      if (REQUEST_ONLY.has(key)) continue;
      out[key] = key === "properties" ? Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, strip(v)])) : strip(value);
    }
    return out;
  };
  return strip(ruleToSchema(rule)) as JsonSchema;
}
