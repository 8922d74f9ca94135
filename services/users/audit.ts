import { defineModel, stored } from "../../lib/storage";
import type { UserActor } from "./rules";

/** What happened to a user account. */
export const USER_AUDIT_ACTIONS = ["user.created", "user.updated", "user.deleted", "user.password_changed"] as const;
export type UserAuditAction = (typeof USER_AUDIT_ACTIONS)[number];

/** Who can change a user: a user, an API key, or the operator (UserActor's kinds). */
const ACTOR_TYPES = ["user", "api_key", "master"] as const satisfies readonly UserActor["kind"][];

/** One recorded change to a user: who did it (user, API key or operator), to whom, which fields, when. */
export const auditFields = {
  id: { read: { type: "string" } },
  account_id: { store: stored.int({ required: true }) },
  action: { store: stored.string({ enum: USER_AUDIT_ACTIONS, required: true }) },
  target_user_id: { store: stored.int({ required: true, ref: "users" }) },
  actor_type: { store: stored.string({ values: ACTOR_TYPES, required: true }) },
  actor_user_id: { store: stored.int({ default: null, ref: "users" }) },
  actor_api_key_id: { store: stored.int({ default: null, ref: "apikeys" }) },
  /** Names of the changed fields (never their values: emails and passwords stay out of the log). */
  fields: { store: stored.strings() },
  client_ip: { store: stored.string({ default: null }) },
  at: { store: stored.date({ required: true }) },
} as const;

const audit = defineModel(auditFields, {
  name: "UserAudit",
  plain: true,
  collection: "user_audit",
  // The account's log is read newest first.
  indexes: [[{ account_id: 1, at: -1 }]],
  setup: (schema) =>
    schema.set("toJSON", {
      transform(_doc: unknown, ret: Record<string, unknown>) {
        const { _id, ...rest } = ret;
        return { id: String(_id), ...rest };
      },
    }),
});
export type UserAuditRecord = typeof audit.record;

/** The user audit log model on a given connection (append-only; written by the users service alone). */
export const userAuditModel = audit.model;

/** The audit entry of one change made by `actor`. */
export function auditEntry(
  actor: UserActor,
  change: { accountId: number; action: UserAuditAction; targetUserId: number; fields?: string[]; clientIp?: string },
  now = new Date(),
): UserAuditRecord {
  return {
    account_id: change.accountId,
    action: change.action,
    target_user_id: change.targetUserId,
    actor_type: actor.kind,
    actor_user_id: actor.kind === "user" ? actor.userId : null,
    actor_api_key_id: actor.kind === "api_key" ? actor.apiKeyId : null,
    fields: change.fields ?? [],
    client_ip: change.clientIp ?? null,
    at: now,
  };
}
