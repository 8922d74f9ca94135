/**
 * The machine-readable description of the REST API (OpenAPI 3.1.0, document version 1.0.0), built from what
 * the gateway actually routes: each alias's path and method, and its action's fastest-validator params, which
 * are the same schemas that validate requests. Nothing is listed by hand, so it cannot drift from the routes.
 */

import { isOptional, objectSchema, ruleToSchema, type JsonSchema } from "../../lib/json-schema";
import { schemaRef, type BodyDecl, type ResponseDecl } from "../../lib/resource";
import { MAX_KEY_LENGTH } from "./idempotency";

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
  /** The action's routes as it declares them ("PUT /agents/:id"); the first is its main one. */
  rest?: string | string[];
  /** One line saying what the operation does. */
  summary?: string;
  /** Operation ids of the routes of an action with several (PUT and PATCH, or two paths), in `rest` order, within its service. */
  operationIds?: string[];
  /** How the action answers, declared beside it (lib/resource.ts). */
  response?: ResponseDecl;
  /** Error answers of this operation alone, by status, with their description. */
  errors?: Record<string, string>;
  /** The body of an action that checks it itself instead of through `params` (team push). */
  body?: BodyDecl;
  /** Params that are files in a multipart/form-data body too (document uploads). */
  multipartFiles?: string[];
}

/** One webhook event type and the named schema of the record its deliveries carry as `data`. */
export interface WebhookEvent {
  type: string;
  record: string;
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

/** Every authenticated POST takes one (services/gateway/idempotency.ts). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the first answer under this key is replayed for 24 h (with Idempotent-Replayed: true); the key with another request is a 422, and while the first request runs a 409.",
  schema: { type: "string", minLength: 1, maxLength: MAX_KEY_LENGTH },
};

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

/**
 * Who may call: no credentials, optional credentials (anonymous or either scheme), a user's access token only (a
 * user's own routes: an API key acts for an account, not a user), or the document's default (either scheme).
 */
function securityOf(auth: string | undefined) {
  if (auth === "none") return { security: [] };
  if (auth === "optional") return { security: [{}, { HTTPBearer: [] }, { APIKeyHeader: [] }] };
  if (auth === "user") return { security: [{ HTTPBearer: [] }] };
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

/**
 * A JSON body of the given params, and nothing else (the gateway refuses unknown fields); optional as a whole when
 * every field is. With `files`, the same fields as multipart/form-data too: those files as binary parts, objects
 * as JSON text, the rest as text.
 */
function requestBody(params: Record<string, unknown>, files: string[] = []) {
  const schema: JsonSchema = { ...objectSchema(params), additionalProperties: false };
  if (!files.length) return { required: Boolean(schema.required), content: json(schema) };
  const properties = Object.fromEntries(
    Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>).map(([name, prop]) => [
      name,
      files.includes(name)
        ? { type: "string", contentMediaType: "application/octet-stream", ...(prop.description ? { description: prop.description } : {}) }
        : prop.type === "object"
          ? { type: "string", contentMediaType: "application/json", ...(prop.description ? { description: prop.description } : {}) }
          : prop,
    ]),
  );
  return { required: Boolean(schema.required), content: { ...json(schema), "multipart/form-data": { schema: { ...schema, properties } } } };
}

/** The operation groups, one per service, with what they hold. */
const TAGS: Record<string, string> = {
  users: "Users of an account: signup, login (access tokens), profiles, roles, password changes and the audit log.",
  "api-keys": "Account API keys, sent as X-AUTH-TOKEN; the key itself is shown once, when created.",
  agents: "AI agents: instructions, model settings, configuration (chat_ui), and the traits, tools and knowledge sources they use.",
  teams: "Teams of agents, with access levels, and their JSON configuration document (push creates or updates a whole team, pull exports it).",
  tools: "Tools agents can call (function, API, MCP servers), with free-form configuration.",
  traits: "Traits (behaviours and skills) associated with agents.",
  knowledge: "Knowledge sources loaded in the background into the account's search index, their documents, and semantic, keyword or hybrid search.",
  entities: "Collected data: records agents extract from conversations, with facets, statistics and CSV export.",
  tasks: "Tasks with subtasks and dependencies, and scheduled tasks that create them on cron schedules.",
  webhooks: "Webhook subscriptions: destinations that receive signed deliveries (Standard Webhooks) of the events under `webhooks`.",
  gateway: "Health of this deployment.",
};

/** An OpenAPI path from a route's: `:name` segments become `{name}`. */
const templated = (path: string) => path.replace(/:(\w+)/g, "{$1}");
/** The parameter names of a templated path, in order. */
const pathParams = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** Where in its action's `rest` list a route is (0: its main route). */
function routeIndex(route: RoutedAction): number {
  const declared = [route.rest ?? []].flat().map((r) => r.trim().split(/\s+/));
  const at = declared.findIndex(([method, path]) => method?.toUpperCase() === route.method.toUpperCase() && path !== undefined && route.path.endsWith(path.replace(/\/$/, "")));
  return Math.max(at, 0);
}

/** A delivery of one event type: Standard Webhooks' {type, timestamp, data}; data is the record as the API shows it ({id} once deleted). */
function webhookOperation({ type, record }: WebhookEvent) {
  const data = type.endsWith(".deleted")
    ? { type: "object", required: ["id"], properties: { id: { type: "integer" } }, additionalProperties: false }
    : schemaRef(record);
  const payload = {
    type: "object",
    required: ["type", "timestamp", "data"],
    properties: { type: { const: type }, timestamp: { type: "string", format: "date-time" }, data },
    additionalProperties: false,
  };
  return {
    post: {
      operationId: `webhook.${type}`,
      tags: ["webhooks"],
      summary: `Delivery of ${type}`,
      description: "POSTed to each subscription that selects this event type, signed with the subscription's secret (webhook-id, webhook-timestamp and webhook-signature headers).",
      requestBody: { required: true, content: json(payload) },
      responses: {
        "200": { description: "Any 2xx status acknowledges the delivery; anything else is retried" },
        "401": { description: "The receiver refuses a delivery whose signature does not verify" },
      },
      security: [],
    },
  };
}

/**
 * The OpenAPI 3.1.0 document of the routed actions and of the webhook deliveries. The server URL is relative (the
 * document's own host), so the document is right wherever the platform is reached.
 */
export function openApiDocument(routes: RoutedAction[], info: { title: string; webhookEvents: WebhookEvent[] }) {
  const paths: Record<string, Record<string, unknown>> = {};
  // One action may serve several routes (PUT and PATCH, two paths): each has its own id (`operationIds`); an
  // undeclared one gets a numbered id, which test/integration/openapi.spec.ts refuses.
  const operationId = (route: RoutedAction, index: number) => {
    const declared = route.operationIds?.[index];
    if (declared) return `${route.action.slice(0, route.action.lastIndexOf(".") + 1)}${declared}`;
    return index ? `${route.action}_${index + 1}` : route.action;
  };
  // Named schemas the actions declare (lib/resource.ts), gathered once each.
  const declaredSchemas: Record<string, JsonSchema> = {};
  for (const route of routes) {
    Object.assign(declaredSchemas, route.response?.schemas, route.body?.schemas);
    // Params whose rule names its schema (`jsonSchema`) bring the named schemas it refers to.
    for (const rule of Object.values(route.params ?? {})) Object.assign(declaredSchemas, (rule as { schemas?: Record<string, JsonSchema> } | null)?.schemas);
  }
  const mainRoute = (route: RoutedAction) => routes.find((r) => r.action === route.action && routeIndex(r) === 0);
  for (const route of [...routes].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))) {
    const method = route.method.toLowerCase();
    const path = templated(route.path);
    const pathKeys = pathParams(path);
    const params = Object.fromEntries(Object.entries(route.params ?? {}).filter(([key]) => !key.startsWith("$")));
    const inBody = ["post", "put", "patch"].includes(method);
    // Writes take their params in the body, but for those the interface puts in the query (`in: "query"`).
    const inQuery = ([, rule]: [string, unknown]) => !inBody || (rule as { in?: string }).in === "query";
    const rest = Object.fromEntries(Object.entries(params).filter(([key]) => !pathKeys.includes(key)));
    const query = Object.entries(rest).filter(inQuery);
    const bodyParams = Object.fromEntries(Object.entries(rest).filter((entry) => !inQuery(entry)));
    const parameters = [
      ...pathKeys.map((name) => parameter(name, "path", params[name] ?? { type: "string" }, true)),
      ...query.map(([name, rule]) => parameter(name, "query", rule, !isOptional(rule))),
      ...(method === "post" && route.auth !== "none" ? [IDEMPOTENCY_KEY_PARAMETER] : []),
    ];
    const index = routeIndex(route);
    const main = index ? mainRoute(route) : undefined;
    const summary = route.summary && main ? `${route.summary} (same as ${main.method.toUpperCase()} ${templated(main.path)})` : route.summary;
    const body = route.body
      ? { requestBody: { required: true, content: json(route.body.body) } }
      : inBody && Object.keys(bodyParams).length ? { requestBody: requestBody(bodyParams, route.multipartFiles) } : {};
    paths[path] ??= {};
    paths[path]![method] = {
      operationId: operationId(route, index),
      tags: [route.action.split(".")[0]],
      ...(summary ? { summary } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...body,
      responses: {
        ...successResponse(successOf(route)),
        ...ERROR_RESPONSES,
        ...(method === "get" ? {} : WRITE_ERROR_RESPONSES),
        ...(inBody || route.body ? BODY_ERROR_RESPONSES : {}),
        ...Object.fromEntries(Object.entries(route.errors ?? {}).map(([status, description]) => [status, errorResponse(description)])),
      },
      ...securityOf(route.auth),
    };
  }
  linkCreatedRecords(paths, declaredSchemas);
  const usedTags = new Set(Object.values(paths).flatMap((ops) => Object.values(ops).flatMap((op) => (op as { tags: string[] }).tags)));
  if (info.webhookEvents.length) usedTags.add("webhooks");
  return {
    openapi: "3.1.0",
    info: {
      title: info.title,
      version: API_DOCUMENT_VERSION,
      description: "REST API of the agent platform. Every record belongs to an account; callers see only their own account's records.",
    },
    servers: [{ url: "/", description: "The host serving this document" }],
    security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }],
    tags: [...usedTags].sort().map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    webhooks: Object.fromEntries(info.webhookEvents.map((event) => [event.type, webhookOperation(event)])),
    components: { ...COMPONENTS, schemas: { ...COMPONENTS.schemas, ...declaredSchemas } },
  };
}

/**
 * OpenAPI links from each create's 201 to the operations on the record it created: those under the collection's path
 * with one more path parameter, naming the record, given the created `id` (`$response.body#/id`) and the create's own
 * path parameters (a source's documents). Clients and tools (e.g. schemathesis' stateful phase) follow them; a
 * parameter named `agent_id_or_identifier` is not one they guess.
 */
function linkCreatedRecords(paths: Record<string, Record<string, unknown>>, schemas: Record<string, JsonSchema>): void {
  type Operation = { operationId: string; responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }>; links?: object }> };
  for (const [collection, operations] of Object.entries(paths)) {
    const created = (operations.post as Operation | undefined)?.responses["201"];
    const ref = created?.content?.["application/json"]?.schema?.$ref;
    const schema = ref ? (schemas[ref.slice(ref.lastIndexOf("/") + 1)] as { properties?: Record<string, unknown> } | undefined) : undefined;
    if (!created || !schema?.properties?.id) continue;
    const owners = pathParams(collection);
    const links: Record<string, object> = {};
    for (const [path, pathOperations] of Object.entries(paths)) {
      const params = pathParams(path);
      const record = params[owners.length];
      if (params.length !== owners.length + 1 || !path.startsWith(`${collection}/{${record}}`)) continue;
      const parameters = { ...Object.fromEntries(owners.map((name) => [name, `$request.path.${name}`])), [record]: "$response.body#/id" };
      for (const operation of Object.values(pathOperations) as Operation[]) links[operation.operationId] = { operationId: operation.operationId, parameters };
    }
    if (Object.keys(links).length) created.links = links;
  }
}

/** A path or query parameter; its description comes from the rule (`description`), which every routed param declares. */
function parameter(name: string, where: "path" | "query", rule: unknown, required: boolean) {
  const { description, ...schema } = ruleToSchema(rule);
  return { name, in: where, required, ...(description ? { description } : {}), schema };
}
