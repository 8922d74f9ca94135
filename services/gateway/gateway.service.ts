import type { IncomingMessage, ServerResponse } from "node:http";
import { Errors, type Context, type ServiceSchema } from "moleculer";
import ApiGateway, { type ApiSettingsSchema } from "moleculer-web";
import { configOf, type Config } from "../../lib/config";
import { ERRORS } from "../../lib/errors";
import { WEBHOOK_EVENTS } from "../../lib/event-types";
import { credentialsRefused, identityResolver, SESSION_CHANGED_EVENT, type IdentityResolver } from "../../lib/auth/identity";
import type { AuthRequirement, Ctx, RequestMeta } from "../../lib/meta";
import { Health, healthReport } from "../../lib/health";
import { renderError } from "../../lib/http-errors";
import { MongoMixin } from "../../lib/mongo.mixin";
import { secretBox } from "../../lib/secrets";
import { SECURITY_HEADERS } from "../../lib/security-headers";
import { openApiDocument, type RoutedAction } from "./openapi";
import { mcpHttpHandler } from "../mcp";
import { IDEMPOTENCY_HEADER, IdempotencyStore, idempotencyModel, keyClaim, REPLAYED_HEADER, type KeyClaim, type StoredAnswer } from "./idempotency";

type McpProxy = ReturnType<typeof mcpHttpHandler>;

/** The part of a moleculer-web alias the OpenAPI document reads. */
interface GatewayAlias {
  method: string;
  fullPath: string;
  action?: string;
}
import { allowedMethods, bodyProblem, clientAddress, jsonBodyParser, preferredLocale, unknownBodyFields, type BodyFieldsDecl, type MatchableAlias } from "./request";

type GatewayRequest = IncomingMessage & {
  $action?: { auth?: AuthRequirement; name?: string } & BodyFieldsDecl;
  $ctx: Context<unknown, RequestMeta>;
  /** What the action answered (onAfterCall), kept for Idempotency-Key replays. */
  $answer?: unknown;
  $alias?: { path?: string };
  /** Full path without the query string and trailing slash (moleculer-web strips the route prefix from req.url). */
  parsedUrl?: string;
  query?: Record<string, unknown>;
  body?: unknown;
};

/** Request headers a service may read from ctx.meta.headers (nothing else is forwarded). */
const FORWARDED_HEADERS = ["x-access-password"];

function setSecurityHeaders(res: ServerResponse) {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}

/** The settings that come from the configuration tree (the rest are fixed, in the schema). */
function configuredSettings(config: Config): Partial<ApiSettingsSchema> {
  return {
    port: config.port,
    cors: config.corsOrigins.length
      ? {
          origin: config.corsOrigins.includes("*") ? "*" : config.corsOrigins,
          methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          allowedHeaders: ["Authorization", "Content-Type", "X-AUTH-TOKEN", "X-Access-Password", "Accept-Language", "Idempotency-Key"],
          exposedHeaders: ["Location", REPLAYED_HEADER],
          maxAge: 600,
        }
      : undefined,
    // Per-request log lines only when debugging: building them costs CPU on every call.
    logRequest: config.logLevel === "debug" ? "debug" : null,
    logResponse: config.logLevel === "debug" ? "debug" : null,
  };
}

/** How often a gateway deletes expired Idempotency-Keys where the database has no TTL index. */
const IDEMPOTENCY_PRUNE_MS = 3600_000;

type CallAction = (route: unknown, actionName: string, req: GatewayRequest, res: ServerResponse, params: unknown, isStream: boolean) => Promise<unknown>;
const libraryCallAction = (ApiGateway.methods as unknown as { callAction: CallAction }).callAction;

interface Vars {
  models: { idempotencyKeys: ReturnType<typeof idempotencyModel> };
  idempotency?: IdempotencyStore;
  idempotencyPrune?: NodeJS.Timeout;
  resolveIdentity: IdentityResolver;
  parseJsonBody: ReturnType<typeof jsonBodyParser>;
  mcpProxy: McpProxy;
}

/**
 * HTTP entry point: maps /api/v1 paths to actions (each action's `rest`), authenticates every request
 * (Bearer JWT or API key, or X-AUTH-TOKEN key), enforces each action's `auth`, and renders every error in one place.
 */
const GatewayService: ServiceSchema<ApiSettingsSchema, Record<string, never>, Vars> = {
  name: "gateway",
  mixins: [ApiGateway, MongoMixin((db) => ({ idempotencyKeys: idempotencyModel(db) }))],

  settings: {
    ip: "0.0.0.0",
    use: [
      (_req: IncomingMessage, res: ServerResponse, next: () => void) => {
        setSecurityHeaders(res);
        next();
      },
    ],
    optimizeOrder: true,
    log4XXResponses: false,
    routes: [
      {
        path: "/",
        authentication: false,
        authorization: false,
        aliases: { "GET health": "gateway.health", "GET openapi.json": "gateway.openapi" },
        mappingPolicy: "restrict",
        bodyParsers: { json: false, urlencoded: false },
      },
      {
        path: "/api/v1",
        aliases: { "GET openapi.json": "gateway.openapi" },
        autoAliases: true,
        mappingPolicy: "restrict",
        authentication: true,
        authorization: true,
        // Our own JSON parser: its errors keep their 4xx status (see jsonBodyParser); made in created() with the
        // configured body limit.
        bodyParsers: false,
        use: [
          function (this: Vars, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) {
            this.parseJsonBody(req, res, next);
          },
        ],
        onBeforeCall(this: { settings: unknown }, ctx: Context, _route: unknown, req: GatewayRequest) {
          const problem = bodyProblem(req.body);
          if (problem) throw ERRORS.validation([problem]);
          const meta = ctx.meta as RequestMeta;
          meta.locale = preferredLocale(req.headers["accept-language"]);
          meta.clientIp = clientAddress(req, configOf(this).trustedProxies);
          meta.headers = Object.fromEntries(
            FORWARDED_HEADERS.map((h) => [h, req.headers[h] as string | undefined]),
          );
        },
        onAfterCall(_ctx: Context, _route: unknown, req: GatewayRequest, _res: ServerResponse, data: unknown) {
          req.$answer = data;
          return data;
        },
      },
      {
        // MCP clients that only know the API's address find the MCP server here too; the mcp service answers.
        path: "/mcp",
        authentication: false,
        authorization: false,
        mappingPolicy: "restrict",
        bodyParsers: { json: false, urlencoded: false },
        aliases: {
          "/"(this: { mcpProxy: McpProxy }, req: IncomingMessage, res: ServerResponse) {
            return this.mcpProxy(req, res);
          },
        },
      },
    ],
    onError(
      this: { logger: { error(...args: unknown[]): void }; aliases: MatchableAlias[] },
      req: GatewayRequest,
      res: ServerResponse,
      err: Error & { code?: unknown; type?: string },
    ) {
      // The router's 404 for a path that exists under other methods is a 405 naming them.
      const allow = err.name === "NotFoundError" && err.type === "NOT_FOUND" ? allowedMethods(this.aliases ?? [], req.parsedUrl ?? "") : [];
      const { status, body, headers } = renderError(allow.length ? ERRORS.methodNotAllowed(allow) : err, req);
      if (status >= 500) this.logger.error("Request failed", req.method, req.url, err);
      if (res.headersSent) return res.end();
      setSecurityHeaders(res);
      res.setHeader("Content-Type", "application/json; charset=utf-8");
      if (status === 401) res.setHeader("WWW-Authenticate", 'Bearer realm="api"');
      for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
      res.writeHead(status);
      res.end(JSON.stringify(body));
    },
  },

  /** The configured settings (port, CORS, request logs), in place before moleculer-web's created() reads them. */
  merged(schema) {
    Object.assign(schema.settings!, configuredSettings(configOf(schema)));
  },

  actions: {
    // moleculer-web's alias listing (every internal action and its validator) is not part of the API.
    listAliases: false,

    /** Liveness and identity of this deployment; served without credentials. */
    health: {
      auth: "none",
      summary: "Health of this deployment (no credentials)",
      response: Health.one(),
      handler() {
        return healthReport(configOf(this));
      },
    },

    /** The OpenAPI 3.1.0 description of every route this gateway serves right now; no credentials needed. */
    openapi: {
      auth: "none",
      handler() {
        const config = configOf(this);
        const aliases = this.aliases as GatewayAlias[];
        const actions = new Map(this.broker.registry.getActionList({}).map((a) => [a.name, a.action as Omit<RoutedAction, "method" | "path" | "action">]));
        const routes: RoutedAction[] = aliases
          .filter((alias) => alias.action && alias.method !== "*" && alias.action !== "gateway.openapi")
          .map((alias) => ({ method: alias.method, path: alias.fullPath, action: alias.action!, ...actions.get(alias.action!) }));
        return openApiDocument(routes, { title: config.serverName, webhookEvents: WEBHOOK_EVENTS });
      },
    },
  },

  events: {
    /** A user changed: their next request re-reads their session (a deleted or disabled user is refused). */
    [SESSION_CHANGED_EVENT]() {
      this.resolveIdentity.forgetSessions();
    },
  },

  methods: {
    /** Resolves the caller (lib/auth/identity: Bearer JWT, X-AUTH-TOKEN key or master key) onto ctx.meta. */
    async authenticate(ctx: Ctx, _route: unknown, req: GatewayRequest) {
      if (req.$action?.auth === "none") return null;
      const identity = await this.resolveIdentity(req.headers, ctx);
      if (identity) Object.assign(ctx.meta, identity);
      return identity;
    },

    /**
     * Enforces the action's `auth` requirement: "required" (the default) or "user" (a user's own routes, which the
     * action refuses an API key with 403) need credentials; "optional" and "none" do not.
     */
    authorize(ctx: Ctx, _route: unknown, req: GatewayRequest) {
      const requirement = req.$action?.auth ?? "required";
      if ((requirement === "required" || requirement === "user") && typeof ctx.meta.accountId !== "number") throw credentialsRefused("Not authenticated");
    },

    /**
     * moleculer-web's call of the action, once the caller is known: a body field the action does not take is a
     * 422 naming it, and a POST with an Idempotency-Key runs once per key (services/gateway/idempotency.ts).
     */
    async callAction(route: unknown, actionName: string, req: GatewayRequest, res: ServerResponse, params: unknown, isStream: boolean) {
      const call = () => libraryCallAction.call(this, route, actionName, req, res, params, isStream);
      const unknown = unknownBodyFields(req.method ?? "", req.body, req.$action ?? {});
      if (unknown.length) throw ERRORS.validation(unknown);
      if (req.method !== "POST") return call();
      const claim = keyClaim(req.headers[IDEMPOTENCY_HEADER], req.$ctx.meta, { method: req.method, path: req.parsedUrl ?? "", query: req.query, body: req.body });
      if (!claim) return call();
      if (!this.idempotency) throw new Errors.ServiceNotAvailableError({ action: "gateway.idempotency" });
      const outcome = await this.idempotency.claim(claim);
      if (!outcome.run) return replay(res, outcome.answer);
      return runOnce(this.idempotency, claim, req, call);
    },
  },

  async started() {
    this.idempotency = new IdempotencyStore(this.models.idempotencyKeys, secretBox(configOf(this).secretsKey));
    if (!(await this.idempotency.ensureExpiry())) {
      const prune = () => this.idempotency!.prune().catch((err) => this.logger.warn("Pruning idempotency keys failed", err));
      this.idempotencyPrune = setInterval(prune, IDEMPOTENCY_PRUNE_MS).unref();
    }
  },

  stopped() {
    clearInterval(this.idempotencyPrune);
  },

  created() {
    const config = configOf(this);
    this.resolveIdentity = identityResolver(config);
    this.parseJsonBody = jsonBodyParser(config.bodyLimit, config.uploads.maxFileBytes);
    this.mcpProxy = mcpHttpHandler({
      answer: (request) => this.broker.call("mcp.handle", request),
      logError: (message, err) => this.logger.error(message, err),
    });
  },
};

/** Runs a claimed request and keeps its answer; a 4xx wrote nothing, so its key is let go for a corrected retry. */
async function runOnce(store: IdempotencyStore, claim: KeyClaim, req: GatewayRequest, call: () => Promise<unknown>) {
  try {
    const result = await call();
    const { $statusCode: status = 200, $location: location } = req.$ctx.meta;
    await store.keep(claim, { status, location, body: req.$answer == null ? undefined : JSON.stringify(req.$answer) });
    return result;
  } catch (err) {
    const rendered = renderError(err as Error, req);
    if (rendered.status < 500) await store.release(claim);
    else await store.keep(claim, { status: rendered.status, body: JSON.stringify(rendered.body) });
    throw err;
  }
}

/** The first answer to an Idempotency-Key, again, marked as a replay. */
function replay(res: ServerResponse, answer: StoredAnswer) {
  res.setHeader(REPLAYED_HEADER, "true");
  if (answer.location) res.setHeader("Location", answer.location);
  if (answer.body !== undefined) res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.writeHead(answer.status);
  res.end(answer.body);
  return true;
}

export default GatewayService;
