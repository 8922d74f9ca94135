import type { IncomingHttpHeaders } from "node:http";
import { ERRORS } from "../errors";
import type { RequestMeta } from "../meta";
import { API_KEY_PREFIX, isMasterKey } from "./api-keys";
import { cachedVerifier, type JwtSettings } from "./jwt";

/** Who the caller is: what an HTTP edge puts on ctx.meta for the services it calls. */
export type Identity = Pick<RequestMeta, "accountId" | "userId" | "apiKeyId" | "authType" | "role" | "permissions">;

/** What users.session answers for a token's user (cached on the users replicas, cleared by every user write). */
export interface SessionState {
  account_id: number;
  role: NonNullable<RequestMeta["role"]>;
  token_version: number;
  is_active: boolean;
}

/** Anything that can call an action: a Context inside an action, or the broker at an HTTP edge. */
export interface ActionCaller {
  call<TResult, TParams>(actionName: string, params: TParams): Promise<TResult>;
}

/** Resolves the credentials of one HTTP request; null when it carries none. */
export interface IdentityResolver {
  (headers: IncomingHttpHeaders, caller: ActionCaller): Promise<Identity | null>;
  /** Drops the cached session states (on SESSION_CHANGED_EVENT). */
  forgetSessions(): void;
}

/** Said by every 401 of an HTTP edge, so a client that sent the wrong thing learns what to send. */
export const ACCEPTED_CREDENTIALS = "send Authorization: Bearer <access token or API key>, or X-AUTH-TOKEN: <API key>";

/** A 401 whose detail says what went wrong and which credentials are accepted. */
export function credentialsRefused(problem: string) {
  return ERRORS.unauthorized(`${problem}; ${ACCEPTED_CREDENTIALS}`);
}

/** Broadcast by the users service after every user write; each HTTP edge then drops its cached session states. */
export const SESSION_CHANGED_EVENT = "users.session-changed";
/**
 * How long an HTTP edge reuses a user's session state instead of asking users.session again (one NATS round trip
 * per request otherwise). The broadcast ends a revoked token at once; this bounds it for an edge that missed it.
 */
const SESSION_CACHE_MS = 5_000;
/** Past this many cached users the cache starts over, so memory stays bounded. */
const SESSION_CACHE_MAX = 10_000;

/**
 * The one credential check of every HTTP edge (the REST gateway and the MCP server), so both accept exactly
 * the same callers: a Bearer JWT (signature verified here, then checked against the user's session state, cached
 * here for seconds and dropped on every user write, so deleting, disabling or a password change ends it at once), an
 * account key as X-AUTH-TOKEN or as a Bearer token (bearer-only clients; told apart by its apk_ prefix, checked
 * against the api-keys service on every request, so a disabled key stops working at once), or the operator's
 * master key (X-AUTH-TOKEN only) acting for the account in X-Account-Id. Invalid credentials throw (401, or 400 for a master key without
 * an account): a bad token is never silently treated as no token.
 */
export function identityResolver(config: { jwt: JwtSettings; masterApiKey: string }): IdentityResolver {
  const verifyAccessToken = cachedVerifier(config.jwt);
  const sessions = new Map<number, { state: SessionState | null; until: number }>();
  const sessionOf = async (userId: number, caller: ActionCaller) => {
    const cached = sessions.get(userId);
    if (cached && cached.until > Date.now()) return cached.state;
    const state = await caller.call<SessionState | null, { user_id: number }>("users.session", { user_id: userId });
    if (sessions.size >= SESSION_CACHE_MAX) sessions.clear();
    sessions.set(userId, { state, until: Date.now() + SESSION_CACHE_MS });
    return state;
  };
  const accountKey = async (key: string, caller: ActionCaller): Promise<Identity> => {
    try {
      return { ...(await caller.call<Identity, { key: string }>("api-keys.authenticate", { key })), authType: "api_key" };
    } catch (err) {
      if ((err as { code?: number }).code === 401) throw credentialsRefused((err as Error).message);
      throw err;
    }
  };
  const resolve = async (headers: IncomingHttpHeaders, caller: ActionCaller): Promise<Identity | null> => {
    const authorization = headers.authorization;
    const apiKey = headers["x-auth-token"];
    if (authorization) {
      // RFC 9110: the scheme, then one or more spaces, then the credentials ("Bearer  <token>" is valid too).
      const [, scheme, token] = /^\s*(\S+)[ \t]+(\S+)\s*$/.exec(authorization) ?? [];
      if (scheme?.toLowerCase() !== "bearer" || !token) throw credentialsRefused("Invalid authorization header");
      if (token.startsWith(API_KEY_PREFIX)) return accountKey(token, caller);
      const claims = await verifyAccessToken(token);
      if (!claims) throw credentialsRefused("Invalid or expired token");
      const session = await sessionOf(claims.userId, caller);
      if (!session || session.account_id !== claims.accountId || session.token_version !== (claims.tokenVersion ?? 0)) {
        throw credentialsRefused("Invalid or expired token");
      }
      if (!session.is_active) throw ERRORS.unauthorized("This user is disabled");
      return { accountId: claims.accountId, userId: claims.userId, authType: "jwt", role: session.role };
    }
    if (typeof apiKey === "string" && apiKey) {
      if (isMasterKey(apiKey, config.masterApiKey)) return masterIdentity(headers);
      return accountKey(apiKey, caller);
    }
    return null;
  };
  return Object.assign(resolve, { forgetSessions: () => sessions.clear() });
}

/** The master key acts for the account named in X-Account-Id; operators use it, never end users. */
function masterIdentity(headers: IncomingHttpHeaders): Identity {
  const accountId = Number(headers["x-account-id"]);
  if (!Number.isInteger(accountId) || accountId <= 0) {
    throw ERRORS.badRequest("The master key needs an X-Account-Id header naming the account to act for");
  }
  return { accountId, authType: "master" };
}
