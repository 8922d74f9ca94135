/**
 * The machine-readable description of the REST API (OpenAPI 3.1.0, document version 1.0.0), built from what
 * the gateway actually routes: each alias's path and method, and its action's fastest-validator params, which
 * are the same schemas that validate requests. Nothing is listed by hand, so it cannot drift from the routes.
 */

/** Document version of the interface (the spec's "version 1.0.0 of the OpenAPI 3.1.0 format"). */
export const API_DOCUMENT_VERSION = "1.0.0";

/** One routed endpoint as the gateway's alias table and the action registry describe it. */
export interface RoutedAction {
  method: string;
  /** Full path with `:param` segments, e.g. /api/v1/agents/:agent_id_or_identifier. */
  path: string;
  action: string;
  params?: Record<string, unknown>;
  auth?: string;
  description?: string;
}

type JsonSchema = Record<string, unknown>;

/** fastest-validator shorthand ("number|optional") or a rule object, as an object. */
function ruleObject(rule: unknown): Record<string, unknown> {
  if (typeof rule === "string") {
    const [type, ...flags] = rule.split("|");
    return Object.fromEntries([["type", type], ...flags.map((f) => [f.trim(), true])]);
  }
  if (Array.isArray(rule)) return { type: "multi", rules: rule };
  return (rule ?? { type: "any" }) as Record<string, unknown>;
}

/** JSON Schema (2020-12, as OpenAPI 3.1 uses) for one fastest-validator rule. */
export function ruleToSchema(rule: unknown): JsonSchema {
  const r = ruleObject(rule);
  let schema: JsonSchema;
  switch (r.type) {
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
      if (r.pattern instanceof RegExp) schema.pattern = r.pattern.source;
      else if (typeof r.pattern === "string") schema.pattern = r.pattern;
      if (Array.isArray(r.enum)) schema.enum = r.enum;
      break;
    case "email":
      schema = { type: "string", format: "email" };
      break;
    case "url":
      schema = { type: "string", format: "uri" };
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
      break;
    case "object":
      schema = r.props || r.properties ? objectSchema((r.props ?? r.properties) as Record<string, unknown>) : { type: "object" };
      break;
    case "multi":
      schema = { anyOf: (r.rules as unknown[]).map(ruleToSchema) };
      break;
    default:
      schema = {};
  }
  if (r.default !== undefined && typeof r.default !== "function") schema.default = r.default;
  if (r.nullable) schema = typeof schema.type === "string" ? { ...schema, type: [schema.type, "null"] } : { anyOf: [schema, { type: "null" }] };
  return schema;
}

function isOptional(rule: unknown): boolean {
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
  };
}

const ERROR_RESPONSES = {
  "401": { description: "Authentication required or invalid", content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorDetail" } } } },
  "403": { description: "Another account's record, or not permitted", content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorDetail" } } } },
  "404": { description: "Not found", content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorDetail" } } } },
  "422": { description: "Validation error", content: { "application/json": { schema: { $ref: "#/components/schemas/HTTPValidationError" } } } },
};

const COMPONENTS = {
  securitySchemes: {
    HTTPBearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
    APIKeyHeader: { type: "apiKey", in: "header", name: "X-AUTH-TOKEN" },
  },
  schemas: {
    ValidationError: {
      type: "object",
      required: ["loc", "msg", "type"],
      properties: {
        loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] } },
        msg: { type: "string" },
        type: { type: "string" },
      },
    },
    HTTPValidationError: { type: "object", properties: { detail: { type: "array", items: { $ref: "#/components/schemas/ValidationError" } } } },
    ErrorDetail: { type: "object", properties: { detail: { type: "string" } } },
  },
};

/** The OpenAPI 3.1.0 document of the routed actions. */
export function openApiDocument(routes: RoutedAction[], info: { title: string; serverUrl: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  // One action may serve several routes (PUT and PATCH, two paths): operationIds must still be unique.
  const operationIds = new Map<string, number>();
  const operationId = (action: string) => {
    const seen = operationIds.get(action) ?? 0;
    operationIds.set(action, seen + 1);
    return seen ? `${action}_${seen + 1}` : action;
  };
  for (const route of [...routes].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))) {
    const method = route.method.toLowerCase();
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const pathKeys = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const params = Object.fromEntries(Object.entries(route.params ?? {}).filter(([key]) => !key.startsWith("$")));
    const rest = Object.fromEntries(Object.entries(params).filter(([key]) => !pathKeys.includes(key)));
    const inBody = ["post", "put", "patch"].includes(method);
    const parameters = [
      ...pathKeys.map((name) => ({ name, in: "path", required: true, schema: params[name] ? ruleToSchema(params[name]) : { type: "string" } })),
      ...(inBody ? [] : Object.entries(rest).map(([name, rule]) => ({ name, in: "query", required: !isOptional(rule), schema: ruleToSchema(rule) }))),
    ];
    paths[path] ??= {};
    paths[path]![method] = {
      operationId: operationId(route.action),
      tags: [route.action.split(".")[0]],
      ...(route.description ? { summary: route.description } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(inBody && Object.keys(rest).length ? { requestBody: { required: true, content: { "application/json": { schema: objectSchema(rest) } } } } : {}),
      // The alias table does not say which 2xx an action answers (200, 201 with Location, 204): a range says it.
      responses: { "2XX": { description: "Successful Response" }, ...ERROR_RESPONSES },
      ...(route.auth === "none" ? { security: [] } : {}),
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: API_DOCUMENT_VERSION },
    servers: [{ url: info.serverUrl }],
    security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }],
    paths,
    components: COMPONENTS,
  };
}
