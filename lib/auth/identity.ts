import type { IncomingHttpHeaders } from "node:http";
import { ERRORS } from "../errors";
import type { RequestMeta } from "../meta";
import { isMasterKey } from "./api-keys";
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
export type IdentityResolver = (headers: IncomingHttpHeaders, caller: ActionCaller) => Promise<Identity | null>;

/**
 * The one credential check of every HTTP edge (the REST gateway and the MCP server), so both accept exactly
 * the same callers: a Bearer JWT (signature verified here, then checked against the user's cached session state,
 * so deleting, disabling or a password change ends it at once), an X-AUTH-TOKEN account key (checked against
 * the api-keys service on every request, so a disabled key stops working at once), or the operator's master
 * key acting for the account in X-Account-Id. Invalid credentials throw (401, or 400 for a master key without
 * an account): a bad token is never silently treated as no token.
 */
export function identityResolver(config: { jwt: JwtSettings; masterApiKey: string }): IdentityResolver {
  const verifyAccessToken = cachedVerifier(config.jwt);
  return async (headers, caller) => {
    const authorization = headers.authorization;
    const apiKey = headers["x-auth-token"];
    if (authorization) {
      const [scheme, token] = authorization.split(" ");
      if (scheme?.toLowerCase() !== "bearer" || !token) throw ERRORS.unauthorized("Invalid authorization header");
      const claims = await verifyAccessToken(token);
      if (!claims) throw ERRORS.unauthorized("Invalid or expired token");
      const session = await caller.call<SessionState | null, { user_id: number }>("users.session", { user_id: claims.userId });
      if (!session || session.account_id !== claims.accountId || session.token_version !== (claims.tokenVersion ?? 0)) {
        throw ERRORS.unauthorized("Invalid or expired token");
      }
      if (!session.is_active) throw ERRORS.unauthorized("This user is disabled");
      return { accountId: claims.accountId, userId: claims.userId, authType: "jwt", role: session.role };
    }
    if (typeof apiKey === "string" && apiKey) {
      if (isMasterKey(apiKey, config.masterApiKey)) return masterIdentity(headers);
      const key = await caller.call<Identity, { key: string }>("api-keys.authenticate", { key: apiKey });
      return { ...key, authType: "api_key" };
    }
    return null;
  };
}

/** The master key acts for the account named in X-Account-Id; operators use it, never end users. */
function masterIdentity(headers: IncomingHttpHeaders): Identity {
  const accountId = Number(headers["x-account-id"]);
  if (!Number.isInteger(accountId) || accountId <= 0) {
    throw ERRORS.badRequest("The master key needs an X-Account-Id header naming the account to act for");
  }
  return { accountId, authType: "master" };
}
