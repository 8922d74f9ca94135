import { Schema, type Connection, type Model } from "mongoose";
import type { UserActor } from "./rules";

/** What happened to a user account. */
export const USER_AUDIT_ACTIONS = ["user.created", "user.updated", "user.deleted", "user.password_changed"] as const;
export type UserAuditAction = (typeof USER_AUDIT_ACTIONS)[number];

/** One recorded change to a user: who did it (user, API key or operator), to whom, which fields, when. */
export interface UserAuditRecord {
  account_id: number;
  action: UserAuditAction;
  target_user_id: number;
  actor_type: UserActor["kind"];
  actor_user_id: number | null;
  actor_api_key_id: number | null;
  /** Names of the changed fields (never their values: emails and passwords stay out of the log). */
  fields: string[];
  client_ip: string | null;
  at: Date;
}

const auditSchema = new Schema<UserAuditRecord>(
  {
    account_id: { type: Number, required: true },
    action: { type: String, enum: USER_AUDIT_ACTIONS, required: true },
    target_user_id: { type: Number, required: true },
    actor_type: { type: String, required: true },
    actor_user_id: { type: Number, default: null },
    actor_api_key_id: { type: Number, default: null },
    fields: { type: [String], default: [] },
    client_ip: { type: String, default: null },
    at: { type: Date, required: true },
  },
  {
    collection: "user_audit",
    versionKey: false,
    toJSON: {
      transform(_doc, ret) {
        const { _id, ...rest } = ret as Record<string, unknown>;
        return { id: String(_id), ...rest };
      },
    },
  },
);
// The account's log is read newest first.
auditSchema.index({ account_id: 1, at: -1 });

/** The user audit log model on a given connection (append-only; written by the users service alone). */
export function userAuditModel(db: Connection): Model<UserAuditRecord> {
  return (db.models.UserAudit as Model<UserAuditRecord>) ?? db.model<UserAuditRecord>("UserAudit", auditSchema);
}

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
