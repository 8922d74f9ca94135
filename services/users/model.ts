import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import type { OutboxEntry } from "../../lib/outbox";
import { USER_ROLES, type UserRole } from "../../lib/meta";


export interface UserRecord {
  _id: number;
  account_id: number;
  /** The user's login: one user per address across the platform. Absent when contact_email holds the address. */
  email?: string;
  /**
   * The address an anonymous signup gave when another user already logs in with it: shown as the user's email,
   * never used to log in (see the users service). Absent otherwise.
   */
  contact_email?: string;
  full_name: string | null;
  password_hash: string;
  locale: string | null;
  is_active: boolean;
  email_verified: boolean;
  role: UserRole;
  /** Carried in every access token; raising it (password change, disable) ends the user's sessions at once. */
  token_version: number;
  outbox: OutboxEntry[];
  created_at: Date;
  updated_at: Date;
}

const userSchema = new Schema<UserRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    // Login is by email, so a login address is unique across the platform, not only per account. Sparse: users
    // whose address is taken hold it in contact_email instead.
    email: {
      type: String,
      unique: true,
      sparse: true,
      required(this: UserRecord) {
        return !this.contact_email;
      },
    },
    contact_email: { type: String },
    full_name: { type: String, default: null },
    password_hash: { type: String, required: true },
    locale: { type: String, default: null },
    is_active: { type: Boolean, default: true },
    email_verified: { type: Boolean, default: false },
    // Users from before roles existed read as members: nobody gains rights by the upgrade.
    role: { type: String, enum: USER_ROLES, default: "member" },
    token_version: { type: Number, default: 0 },
    outbox: {
      type: [{ _id: false, event: String, payload: Schema.Types.Mixed, created_at: Date }],
      default: [],
    },
  },
  // The shown email is the login or, for a user without one, its contact address (in the same place, so both
  // kinds of user read alike).
  recordSchemaOptions(["password_hash", "outbox", "token_version"], { contact_email: "email" }),
);
// The outbox sweeper looks for users with unpublished events.
userSchema.index({ "outbox.created_at": 1 }, { sparse: true });
// The account's users, in id order.
userSchema.index({ account_id: 1, _id: 1 });

/** The users model on a given connection. */
export function userModel(db: Connection): Model<UserRecord> {
  return (db.models.User as Model<UserRecord>) ?? db.model<UserRecord>("User", userSchema);
}
