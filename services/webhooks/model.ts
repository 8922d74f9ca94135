import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";

export interface WebhookSubscriptionRecord {
  _id: number;
  account_id: number;
  url: string;
  description: string | null;
  /** Event types delivered; empty means every type. */
  event_types: string[];
  enabled: boolean;
  /** Why delivery stopped (a 410 Gone answer); null while enabled. */
  disabled_reason: string | null;
  /** The signing secret, sealed with lib/secrets; only the secret endpoints ever open it. */
  secret_sealed: string;
  /** The secret before the last rotation, still signing until previous_secret_expires_at. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const subscriptionSchema = new Schema<WebhookSubscriptionRecord>(
  {
    _id: { type: Number, required: true },
    account_id: { type: Number, required: true },
    url: { type: String, required: true },
    description: { type: String, default: null },
    event_types: { type: [String], default: [] },
    enabled: { type: Boolean, default: true },
    disabled_reason: { type: String, default: null },
    secret_sealed: { type: String, required: true },
    previous_secret_sealed: { type: String, default: null },
    previous_secret_expires_at: { type: Date, default: null },
  },
  {
    ...recordSchemaOptions<WebhookSubscriptionRecord>(["secret_sealed", "previous_secret_sealed", "previous_secret_expires_at"]),
    collection: "webhook_subscriptions",
  },
);
subscriptionSchema.index({ account_id: 1, created_at: -1, _id: -1 });

/** The subscriptions model on a given connection. */
export function subscriptionModel(db: Connection): Model<WebhookSubscriptionRecord> {
  return (
    (db.models.WebhookSubscription as Model<WebhookSubscriptionRecord>) ??
    db.model<WebhookSubscriptionRecord>("WebhookSubscription", subscriptionSchema)
  );
}

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
