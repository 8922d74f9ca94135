/**
 * The machine-readable description of the REST API (OpenAPI 3.1.0, document version 1.0.0), built from what
 * the gateway actually routes: each alias's path and method, and its action's fastest-validator params, which
 * are the same schemas that validate requests. Nothing is listed by hand, so it cannot drift from the routes.
 */

import { isOptional, objectSchema, ruleToSchema, type JsonSchema } from "../../lib/json-schema";
import type { ResponseDecl } from "../../lib/resource";

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
  /** How the action answers, declared beside it (lib/resource.ts). */
  response?: ResponseDecl;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ "application/json": { schema } });
const errorResponse = (description: string, schema = ref("ErrorDetail")) => ({ description, content: json(schema) });

/** Refusals any operation can answer (the gateway's error mapper renders them all). */
const ERROR_RESPONSES = {
  "400": errorResponse("Malformed request (bad JSON, undecodable body, missing header)"),
  "401": errorResponse("Authentication required or invalid"),
  "403": errorResponse("Another account's record, or not permitted"),
  "404": errorResponse("Not found"),
  "422": errorResponse("Validation error", ref("HTTPValidationError")),
  // Answered by Node's HTTP parser itself, before the gateway: no body.
  "431": { description: "Request headers too large" },
  "429": { ...errorResponse("Too many failed attempts"), headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } },
};
/** Further refusals of operations that write: conflicts (unique fields, referenced records), and of bodies. */
const WRITE_ERROR_RESPONSES = { "409": errorResponse("Conflict with the current state (e.g. a taken email or identifier)") };
const BODY_ERROR_RESPONSES = {
  "413": errorResponse("Request body too large (BODY_LIMIT)"),
  "415": errorResponse("Unsupported Content-Encoding"),
};

const RECORD_FIELDS = {
  id: { type: ["integer", "string"] },
  created_at: { type: "string", format: "date-time" },
  updated_at: { type: "string", format: "date-time" },
};
const nullable = (type: string, extra: JsonSchema = {}) => ({ type: [type, "null"], ...extra });
const pageOf = (items: JsonSchema) => ({
  type: "object",
  required: ["data", "pagination"],
  properties: { data: { type: "array", items }, pagination: ref("Pagination") },
});

/** Response bodies the services render, as JSON Schema. Records list what every record has; resources add their fields. */
const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
  Record: { type: "object", required: ["id"], properties: RECORD_FIELDS },
  Pagination: {
    type: "object",
    required: ["total", "skip", "limit", "has_more"],
    properties: { total: { type: "integer" }, skip: { type: "integer" }, limit: { type: "integer" }, has_more: { type: "boolean" } },
  },
  Page: pageOf(ref("Record")),
  Message: { type: "object", required: ["message"], properties: { message: { type: "string" } } },
  Token: {
    type: "object",
    required: ["access_token", "token_type", "expires_in"],
    properties: { access_token: { type: "string" }, token_type: { const: "bearer" }, expires_in: { type: "integer" } },
  },
  UserPublic: {
    type: "object",
    required: ["id", "account_id", "email", "role", "is_active", "email_verified"],
    properties: {
      ...RECORD_FIELDS,
      id: { type: "integer" },
      account_id: { type: "integer" },
      email: { type: "string" },
      full_name: nullable("string"),
      locale: nullable("string"),
      role: { enum: ["owner", "admin", "member"] },
      is_active: { type: "boolean" },
      email_verified: { type: "boolean" },
    },
  },
  UserCreateResponse: { allOf: [ref("UserPublic"), ref("Token")] },
  UserAuditEntry: {
    type: "object",
    required: ["id", "account_id", "action", "target_user_id", "actor_type", "fields", "at"],
    properties: {
      id: { type: "string" },
      account_id: { type: "integer" },
      action: { enum: ["user.created", "user.updated", "user.deleted", "user.password_changed"] },
      target_user_id: { type: "integer" },
      actor_type: { enum: ["user", "api_key", "master"] },
      actor_user_id: nullable("integer"),
      actor_api_key_id: nullable("integer"),
      fields: { type: "array", items: { type: "string" } },
      client_ip: nullable("string"),
      at: { type: "string", format: "date-time" },
    },
  },
  AccountApiKey: {
    type: "object",
    required: ["id", "account_id", "name", "status", "prefix", "permissions"],
    properties: {
      ...RECORD_FIELDS,
      id: { type: "integer" },
      account_id: { type: "integer" },
      name: { type: "string" },
      status: { enum: ["active", "inactive"] },
      prefix: { type: "string" },
      permissions: { type: "array", items: { enum: ["users:manage"] } },
      expires_at: nullable("string", { format: "date-time" }),
      last_used_at: nullable("string", { format: "date-time" }),
      created_by_user_id: nullable("integer"),
    },
  },
  AccountApiKeyCreateResponse: {
    allOf: [ref("AccountApiKey"), { type: "object", required: ["key"], properties: { key: { type: "string" } } }],
  },
  Health: {
    type: "object",
    required: ["status"],
    properties: { status: { type: "string" }, server: { type: "string" }, version: { type: "string" }, api_url: { type: "string" } },
  },
};

type Success = ResponseDecl;

const ANY_JSON: JsonSchema = {};
const OBJECT: JsonSchema = { type: "object" };
/** Successes that the method-and-name convention below does not describe, by action. */
const SUCCESS_BY_ACTION: Record<string, Success> = {
  "gateway.health": { status: 200, body: ref("Health") },
  "users.create": { status: 201, body: ref("UserCreateResponse") },
  "users.login": { status: 200, body: ref("Token") },
  "users.changePassword": { status: 200, body: ref("Token") },
  "users.verifyEmail": { status: 200, body: ref("Message") },
  "users.list": { status: 200, body: { type: "array", items: ref("UserPublic") } },
  "users.me": { status: 200, body: ref("UserPublic") },
  "users.updateMe": { status: 200, body: ref("UserPublic") },
  "users.get": { status: 200, body: ref("UserPublic") },
  "users.update": { status: 200, body: ref("UserPublic") },
  "users.auditLog": { status: 200, body: pageOf(ref("UserAuditEntry")) },
  "api-keys.list": { status: 200, body: { type: "array", items: ref("AccountApiKey") } },
  "api-keys.create": { status: 201, body: ref("AccountApiKeyCreateResponse") },
  "api-keys.get": { status: 200, body: ref("AccountApiKey") },
  "api-keys.update": { status: 200, body: ref("AccountApiKey") },
  "agents.traits": { status: 200, body: { type: "array", items: ref("Record") } },
  "agents.tools": { status: 200, body: { type: "array", items: OBJECT } },
  "agents.attachKnowledgeRetrieval": { status: 200, body: OBJECT },
  "traits.categories": { status: 200, body: ANY_JSON },
  "teams.push": { status: 200, body: ref("Record") },
  "teams.pull": { status: 200, body: OBJECT },
  "tasks.list": { status: 200, body: { type: "array", items: ref("Record") } },
  "tasks.subtasks": { status: 200, body: { type: "array", items: ref("Record") } },
  "tasks.addDependency": { status: 200, body: ref("Message") },
  "knowledge.remove": { status: 200, body: OBJECT },
  "knowledge.deleteDocument": { status: 200, body: OBJECT },
  "entities.export": { status: 200, body: "csv" },
};

/**
 * The success of a routed action: from the table above, else by convention (create actions answer 201 with
 * the record and its Location, deletes 204, lists a page, reads and updates the record, anything else a JSON object).
 */
export function successOf(route: Pick<RoutedAction, "action" | "method" | "response">): Success {
  if (route.response) return route.response;
  const known = SUCCESS_BY_ACTION[route.action];
  if (known) return known;
  const name = route.action.split(".").pop() ?? "";
  const method = route.method.toUpperCase();
  if (method === "DELETE") return { status: 204, body: "none" };
  if (method === "POST" && /^(scheduled)?create$/i.test(name)) return { status: 201, body: ref("Record") };
  if (method === "GET" && /(^list|List$|^find$|^deliveries$|^directory$|^listDocuments$)/.test(name)) return { status: 200, body: pageOf(OBJECT) };
  if (/^(get|update|scheduledGet|scheduledUpdate|setTraits)$/.test(name)) return { status: 200, body: ref("Record") };
  return { status: 200, body: OBJECT };
}

function successResponse(success: Success) {
  const description = success.status === 201 ? "Created" : success.status === 204 ? "No Content" : "OK";
  if (success.body === "none") return { [success.status]: { description } };
  if (success.body === "csv") return { [success.status]: { description, content: { "text/csv": { schema: { type: "string" } } } } };
  const headers = success.status === 201 ? { headers: { Location: { description: "Address of the created record", schema: { type: "string" } } } } : {};
  return { [success.status]: { description, ...headers, content: json(success.body) } };
}

/** Who may call: no credentials, optional credentials (anonymous or either scheme), or the document's default. */
function securityOf(auth: string | undefined) {
  if (auth === "none") return { security: [] };
  if (auth === "optional") return { security: [{}, { HTTPBearer: [] }, { APIKeyHeader: [] }] };
  return {};
}

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
    HTTPValidationError: { type: "object", required: ["detail"], properties: { detail: { type: "array", items: ref("ValidationError") } } },
    ErrorDetail: { type: "object", required: ["detail"], properties: { detail: { type: "string" } } },
    ...RESPONSE_SCHEMAS,
  },
};

/** A JSON body of the given params; optional as a whole when every field is. */
function requestBody(params: Record<string, unknown>) {
  const schema = objectSchema(params);
  return { required: Boolean(schema.required), content: json(schema) };
}

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
  // Named response schemas the actions declare (lib/resource.ts), gathered once each.
  const declaredSchemas: Record<string, JsonSchema> = {};
  for (const route of routes) Object.assign(declaredSchemas, route.response?.schemas);
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
      ...(inBody && Object.keys(rest).length ? { requestBody: requestBody(rest) } : {}),
      responses: {
        ...successResponse(successOf(route)),
        ...ERROR_RESPONSES,
        ...(method === "get" ? {} : WRITE_ERROR_RESPONSES),
        ...(inBody ? BODY_ERROR_RESPONSES : {}),
      },
      ...securityOf(route.auth),
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: API_DOCUMENT_VERSION },
    servers: [{ url: info.serverUrl }],
    security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }],
    paths,
    components: { ...COMPONENTS, schemas: { ...COMPONENTS.schemas, ...declaredSchemas } },
  };
}
