import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { MAX_URL_LENGTH, WEBHOOK_EVENT_TYPES } from "./rules";

/**
 * Webhook subscriptions; the signing secret is never in a subscription's response (see the secret actions), so
 * never in its change events either.
 */
export const subscriptions = defineResource({
  name: "WebhookSubscription",
  collection: "webhook_subscriptions",
  storage: {
    name: "WebhookSubscription",
    collection: "webhook_subscriptions",
    indexes: [[{ account_id: 1, created_at: -1, _id: -1 }]],
  },
  path: "/webhook-subscriptions",
  idParam: "id",
  event: "webhook_subscription",
  fields: {
    url: { write: { type: "string", min: 1, max: MAX_URL_LENGTH, trim: true }, store: stored.string({ required: true }) },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true }, store: stored.string({ default: null }) },
    /** Event types delivered; empty means every type. */
    event_types: {
      write: {
        type: "array",
        max: WEBHOOK_EVENT_TYPES.length,
        optional: true,
        items: {
          type: "enum",
          values: WEBHOOK_EVENT_TYPES,
          messages: { enumValue: "The '{field}' field must be one of the event types {expected}." },
        },
      },
      read: { type: "array", items: { type: "string" } },
      store: stored.strings(),
    },
    enabled: { write: { type: "boolean", optional: true }, store: stored.boolean({ default: true }) },
    /** Why delivery stopped (a 410 Gone answer); null while enabled. */
    disabled_reason: { store: stored.string({ default: null }) },
    /** The signing secret, sealed with lib/secrets; only the secret endpoints ever open it. */
    secret_sealed: { read: false, store: stored.string({ required: true }) },
    /** The secret before the last rotation, still signing until previous_secret_expires_at. */
    previous_secret_sealed: { read: false, store: stored.string({ default: null }) },
    previous_secret_expires_at: { read: false, store: stored.date({ default: null }) },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** The subscriptions model on a given connection. */
export const subscriptionModel = subscriptions.model;
export type WebhookSubscriptionRecord = typeof subscriptions.types.record;

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookDeliveryRecord {
  /** The webhook-id header: identical on every attempt. */
  _id: string;
  subscription_id: number;
  account_id: number;
  type: string;
  /** The exact bytes every attempt sends and signs. */
  body: string;
  /** Attempts started so far (a claim counts one). */
  attempts: number;
  next_attempt_at: Date;
  status: DeliveryStatus;
  /** The dispatcher holding the current attempt, and until when; a past expiry means nobody holds it. */
  lease_owner: string | null;
  lease_expires_at: Date;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const deliverySchema = new Schema<WebhookDeliveryRecord>(
  {
    _id: { type: String, required: true },
    subscription_id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    type: { type: String, required: true },
    body: { type: String, required: true },
    attempts: { type: Number, default: 0 },
    next_attempt_at: { type: Date, required: true },
    status: { type: String, enum: DELIVERY_STATUSES, default: "pending" },
    lease_owner: { type: String, default: null },
    lease_expires_at: { type: Date, default: () => new Date(0) },
    last_status: { type: Number, default: null },
    last_error: { type: String, default: null },
    delivered_at: { type: Date, default: null },
  },
  { ...recordSchemaOptions<WebhookDeliveryRecord>(["body", "lease_owner", "lease_expires_at"]), collection: "webhook_deliveries" },
);
deliverySchema.index({ status: 1, next_attempt_at: 1 });
deliverySchema.index({ account_id: 1, subscription_id: 1, created_at: -1, _id: -1 });

/** The deliveries model on a given connection. */
export function deliveryModel(db: Connection): Model<WebhookDeliveryRecord> {
  return (
    (db.models.WebhookDelivery as Model<WebhookDeliveryRecord>) ??
    db.model<WebhookDeliveryRecord>("WebhookDelivery", deliverySchema)
  );
}
