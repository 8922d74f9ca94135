import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { API_KEY_PERMISSIONS, type ApiKeyPermission } from "../../lib/auth/api-keys";

export const API_KEY_STATUSES = ["active", "inactive"] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

export interface ApiKeyRecord {
  _id: number;
  account_id: number;
  name: string;
  status: ApiKeyStatus;
  /** SHA-256 of the key: the only form in which the key is stored. */
  key_hash: string;
  /** First characters of the key, shown so users can tell keys apart. */
  prefix: string;
  expires_at: Date | null;
  permissions: ApiKeyPermission[];
  last_used_at: Date | null;
  /** The person answerable for the key: who made it, or who made the key it was made with (revoked with them). */
  created_by_user_id: number | null;
  /** The key it was made with, when a key made it. */
  created_by_api_key_id: number | null;
  created_at: Date;
  updated_at: Date;
}

const apiKeySchema = new Schema<ApiKeyRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    name: { type: String, required: true },
    status: { type: String, enum: API_KEY_STATUSES, default: "active" },
    // Every authenticated request with a key looks it up by hash.
    key_hash: { type: String, required: true, unique: true },
    prefix: { type: String, required: true },
    expires_at: { type: Date, default: null },
    permissions: { type: [{ type: String, enum: API_KEY_PERMISSIONS }], default: [] },
    last_used_at: { type: Date, default: null },
    created_by_user_id: { type: Number, default: null },
    created_by_api_key_id: { type: Number, default: null },
  },
  recordSchemaOptions<ApiKeyRecord>(["key_hash"]),
);
// The account's keys, in id order.
apiKeySchema.index({ account_id: 1, _id: 1 });

/** The account API keys model on a given connection. */
export function apiKeyModel(db: Connection): Model<ApiKeyRecord> {
  return (db.models.ApiKey as Model<ApiKeyRecord>) ?? db.model<ApiKeyRecord>("ApiKey", apiKeySchema);
}
