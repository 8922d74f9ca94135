import { USER_ROLES } from "../../lib/meta";
import { defineView, RECORD_FIELDS } from "../../lib/resource";
import { USER_AUDIT_ACTIONS } from "./audit";

const nullable = <T extends string>(type: T) => ({ type, nullable: true }) as const;

/**
 * A user's fields: what a signup or an update may write and what responses show. Users keep their own actions
 * (signup, login, self-service and managed updates); the password is written only through them.
 */
export const userFields = {
  email: { write: { type: "email", max: 254 }, read: { type: "string" } },
  full_name: { write: { type: "string", max: 255, optional: true, nullable: true } },
  locale: { write: { type: "string", max: 35, optional: true, nullable: true } },
  // Account management: only owners and admins change these, never on themselves.
  role: { write: { type: "enum", values: USER_ROLES, optional: true }, read: { type: "enum", values: USER_ROLES } },
  is_active: { write: { type: "boolean", optional: true } },
  email_verified: { read: { type: "boolean" } },
} as const;

const tokenFields = {
  access_token: { read: { type: "string" } },
  token_type: { read: { type: "enum", values: ["bearer"] } },
  expires_in: { read: { type: "number", integer: true } },
} as const;

export const UserPublic = defineView("UserPublic", { ...RECORD_FIELDS, ...userFields });
export const Token = defineView("Token", tokenFields);
/** A signup answers the new user and a token for it. */
export const UserCreated = defineView("UserCreateResponse", { ...RECORD_FIELDS, ...userFields, ...tokenFields });
export const UserAuditEntry = defineView("UserAuditEntry", {
  id: { read: { type: "string" } },
  account_id: { read: { type: "number", integer: true } },
  action: { read: { type: "enum", values: USER_AUDIT_ACTIONS } },
  target_user_id: { read: { type: "number", integer: true } },
  actor_type: { read: { type: "enum", values: ["user", "api_key", "master"] } },
  actor_user_id: { read: { type: "number", integer: true, nullable: true } },
  actor_api_key_id: { read: { type: "number", integer: true, nullable: true } },
  fields: { read: { type: "array", items: { type: "string" } } },
  client_ip: { read: nullable("string") },
  at: { read: { type: "date" } },
});
