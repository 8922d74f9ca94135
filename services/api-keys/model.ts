import { API_KEY_PERMISSIONS } from "../../lib/auth/api-keys";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";

export const API_KEY_STATUSES = ["active", "inactive"] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

const nullableDate = { type: "date", nullable: true } as const;

/**
 * Account API keys: the plaintext key is shown once at creation; only its hash is stored (never shown). Declared
 * here, beside nothing else: the fields' storage gives the model and the record type.
 */
export const apiKeys = defineResource({
  name: "AccountApiKey",
  collection: "apikeys",
  storage: {
    name: "ApiKey",
    // The account's keys, in id order.
    indexes: [[{ account_id: 1, _id: 1 }]],
    // As records have held them since before the declaration listed the writable fields first.
    order: ["name", "status", "key_hash", "prefix", "expires_at", "permissions", "last_used_at", "created_by_user_id", "created_by_api_key_id"],
  },
  path: "/account-api-keys",
  idParam: "api_key_id",
  event: "api_key",
  patch: false,
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true }, store: stored.string({ required: true }) },
    status: {
      write: { type: "enum", values: API_KEY_STATUSES, optional: true },
      on: "update",
      read: { type: "enum", values: API_KEY_STATUSES },
      store: stored.string({ enum: API_KEY_STATUSES, default: "active" }),
    },
    expires_at: { write: { type: "date", convert: true, optional: true, nullable: true }, on: "create", read: nullableDate, store: stored.date({ default: null }) },
    permissions: {
      write: { type: "array", items: { type: "enum", values: API_KEY_PERMISSIONS }, unique: true, optional: true },
      store: stored.strings({ enum: API_KEY_PERMISSIONS }),
    },
    /** SHA-256 of the key: the only form in which the key is stored. Every request with a key looks it up by hash. */
    key_hash: { read: false, store: stored.string({ required: true, unique: true }) },
    /** First characters of the key, shown so users can tell keys apart. */
    prefix: { store: stored.string({ required: true }) },
    last_used_at: { store: stored.date({ default: null }) },
    /** The person answerable for the key: who made it, or who made the key it was made with (revoked with them). */
    created_by_user_id: { store: stored.int({ default: null, ref: "users" }) },
    /** The key it was made with, when a key made it. */
    created_by_api_key_id: { store: stored.int({ default: null, ref: "apikeys" }) },
  },
  list: { limits: { max: 1000, def: 100 }, sort: { _id: 1 }, bare: true },
});

/** The account API keys model on a given connection. */
export const apiKeyModel = apiKeys.model;
export type ApiKeyRecord = typeof apiKeys.types.record;
