import type { Context } from "moleculer";

/** How the caller proved who they are. */
export type AuthType = "jwt" | "api_key" | "master";

/** What the gateway puts on ctx.meta for every request; services read the caller only from here. */
export interface RequestMeta {
  accountId?: number;
  userId?: number;
  apiKeyId?: number;
  authType?: AuthType;
  /** Preferred locale from Accept-Language, e.g. "de-DE". */
  locale?: string;
  /** Selected request headers a service needs (e.g. x-access-password). */
  headers?: Record<string, string | undefined>;
  $statusCode?: number;
  $location?: string;
  $responseType?: string;
  $responseHeaders?: Record<string, string>;
}

/** Context type for action handlers. */
export type Ctx<P = Record<string, unknown>> = Context<P, RequestMeta>;

/** Who may call an action through the gateway: "required" (default), "optional" or "none". */
export type AuthRequirement = "required" | "optional" | "none";
