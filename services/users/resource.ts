import { Schema } from "mongoose";
import { USER_ROLES } from "../../lib/meta";
import type { OutboxEntry } from "../../lib/outbox";
import { defineView, RECORD_FIELDS } from "../../lib/resource";
import { defineModel, stored } from "../../lib/storage";
import { auditFields } from "./audit";

/**
 * A user's fields: what a signup or an update may write, what responses show and how each is stored. Users keep
 * their own actions (signup, login, self-service and managed updates); the password is written only through them.
 */
export const userFields = {
  // Login is by email, so a login address is unique across the platform, not only per account. Sparse: users
  // whose address is taken hold it in contact_email instead.
  email: {
    write: { type: "email", max: 254 },
    read: { type: "string" },
    store: stored.string({ unique: true, sparse: true, required(this: { contact_email?: string }) { return !this.contact_email; } }),
  },
  /**
   * The address an anonymous signup gave when another user already logs in with it: shown as the user's email,
   * never used to log in (see the users service). Absent otherwise.
   */
  contact_email: { read: false, store: stored.string() },
  full_name: { write: { type: "string", max: 255, optional: true, nullable: true }, store: stored.string({ default: null }) },
  password_hash: { read: false, store: stored.string({ required: true }) },
  locale: { write: { type: "string", max: 35, optional: true, nullable: true }, store: stored.string({ default: null }) },
  // Account management: only owners and admins change these, never on themselves.
  role: {
    write: { type: "enum", values: USER_ROLES, optional: true },
    read: { type: "enum", values: USER_ROLES },
    // Users from before roles existed read as members: nobody gains rights by the upgrade.
    store: stored.string({ enum: USER_ROLES, default: "member" }),
  },
  is_active: { write: { type: "boolean", optional: true }, store: stored.boolean({ default: true }) },
  email_verified: { store: stored.boolean({ default: false }) },
  /** Carried in every access token; raising it (password change, disable) ends the user's sessions at once. */
  token_version: { read: false, store: stored.int({ default: 0 }) },
  outbox: {
    read: false,
    store: stored.custom<OutboxEntry[]>({ type: [{ _id: false, event: String, payload: Schema.Types.Mixed, created_at: Date }], default: [] }),
  },
} as const;

/** The users model: its schema from the fields' storage. */
export const users = defineModel(userFields, {
  name: "User",
  // As records have held them since before the declaration listed the shown fields first.
  order: ["email", "contact_email", "full_name", "password_hash", "locale", "is_active", "email_verified", "role", "token_version", "outbox"],
  // The shown email is the login or, for a user without one, its contact address (in the same place, so both
  // kinds of user read alike).
  standIns: { contact_email: "email" },
  indexes: [
    // The outbox sweeper looks for users with unpublished events.
    [{ "outbox.created_at": 1 }, { sparse: true }],
    // The account's users, in id order.
    [{ account_id: 1, _id: 1 }],
  ],
});
/** The users model on a given connection. */
export const userModel = users.model;
export type UserRecord = typeof users.record;

const tokenFields = {
  access_token: { read: { type: "string" } },
  token_type: { read: { type: "enum", values: ["bearer"] } },
  expires_in: { read: { type: "number", integer: true } },
} as const;

export const UserPublic = defineView("UserPublic", { ...RECORD_FIELDS, ...userFields });
export const Token = defineView("Token", tokenFields);
/** A signup answers the new user and a token for it. */
export const UserCreated = defineView("UserCreateResponse", { ...RECORD_FIELDS, ...userFields, ...tokenFields });
export const UserAuditEntry = defineView("UserAuditEntry", auditFields);
