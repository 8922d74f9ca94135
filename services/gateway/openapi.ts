/**
 * The machine-readable description of the REST API (OpenAPI 3.1.0, document version 1.0.0), built from what
 * the gateway actually routes: each alias's path and method, and its action's fastest-validator params, which
 * are the same schemas that validate requests. Nothing is listed by hand, so it cannot drift from the routes.
 */

import { isOptional, objectSchema, ruleToSchema, type JsonSchema } from "../../lib/json-schema";
import { schemaRef, type ResponseDecl } from "../../lib/resource";

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

const json = (schema: JsonSchema) => ({ "application/json": { schema } });
const errorResponse = (description: string, schema = schemaRef("ErrorDetail")) => ({ description, content: json(schema) });

/** Refusals any operation can answer (the gateway's error mapper renders them all). */
const ERROR_RESPONSES = {
  "400": errorResponse("Malformed request (bad JSON, undecodable body, missing header)"),
  "401": errorResponse("Authentication required or invalid"),
  "403": errorResponse("Another account's record, or not permitted"),
  "404": errorResponse("Not found"),
  "422": errorResponse("Validation error", schemaRef("HTTPValidationError")),
  // Answered by Node's HTTP parser itself, before the gateway: no body.
  "431": { description: "Request headers too large" },
  "429": { ...errorResponse("Too many failed attempts"), headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } },
};
/** Further refusals of operations that write: conflicts (unique fields, referenced records), and of bodies. */
const WRITE_ERROR_RESPONSES = { "409": errorResponse("Conflict with the current state (e.g. a taken email or identifier)") };
const BODY_ERROR_RESPONSES = {
  "413": errorResponse("Request body too large (BODY_LIMIT)"),
  "415": errorResponse("Unsupported Content-Type, charset or Content-Encoding"),
};

const OBJECT: JsonSchema = { type: "object" };

/**
 * The success of a routed action: as it declares it (lib/resource.ts), else a JSON object (DELETE: 204). Every
 * routed action of the platform declares one (test/integration/openapi.spec.ts checks it).
 */
export function successOf(route: Pick<RoutedAction, "method" | "response">): ResponseDecl {
  if (route.response) return route.response;
  return route.method.toUpperCase() === "DELETE" ? { status: 204, body: "none" } : { status: 200, body: OBJECT };
}

function successResponse(success: ResponseDecl) {
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
    HTTPBearer: { type: "http", scheme: "bearer", description: "An access token (JWT) from login or signup, or an account API key (apk_...)" },
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
    HTTPValidationError: { type: "object", required: ["detail"], properties: { detail: { type: "array", items: schemaRef("ValidationError") } } },
    ErrorDetail: { type: "object", required: ["detail"], properties: { detail: { type: "string" } } },
  },
};

/** A JSON body of the given params, and nothing else (the gateway refuses unknown fields); optional as a whole when every field is. */
function requestBody(params: Record<string, unknown>) {
  const schema: JsonSchema = { ...objectSchema(params), additionalProperties: false };
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
