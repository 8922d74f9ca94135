import { defineResource, defineView } from "../../lib/resource";
import { defineModel, stored } from "../../lib/storage";
import { MAX_URL_LENGTH, WEBHOOK_EVENT_TYPES } from "./rules";

/** A sealed signing secret and when it stops signing (ISO 8601). */
export interface SealedSecret {
  sealed: string;
  expires_at: string;
}

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
    /**
     * Secrets of earlier rotations whose overlap has not ended (a rotation within another's overlap), newest first,
     * at most MAX_OLDER_SECRETS: each keeps signing until the expiry its rotation announced.
     */
    older_secrets: { read: false, store: stored.json<SealedSecret[]>({ default: () => [] }) },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** The subscriptions model on a given connection. */
export const subscriptionModel = subscriptions.model;
export type WebhookSubscriptionRecord = typeof subscriptions.types.record;

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A delivery: stored, and shown (GET .../deliveries) without its body and lease. */
const deliveryFields = {
  id: { read: { type: "string" } },
  /** The webhook-id header: identical on every attempt. */
  _id: { read: false, store: stored.string({ required: true }) },
  subscription_id: { store: stored.int({ required: true, ref: "webhook_subscriptions" }) },
  account_id: { store: stored.int({ required: true }) },
  type: { store: stored.string({ required: true }) },
  /** The exact bytes every attempt sends and signs. */
  body: { read: false, store: stored.string({ required: true }) },
  /** Attempts started so far (a claim counts one). */
  attempts: { store: stored.int({ default: 0 }) },
  next_attempt_at: { store: stored.date({ required: true }) },
  status: { store: stored.string({ enum: DELIVERY_STATUSES, default: "pending" }) },
  /** The dispatcher holding the current attempt, and until when; a past expiry means nobody holds it. */
  lease_owner: { read: false, store: stored.string({ default: null }) },
  lease_expires_at: { read: false, store: stored.date({ default: () => new Date(0) }) },
  last_status: { store: stored.int({ default: null }) },
  last_error: { store: stored.string({ default: null }) },
  delivered_at: { store: stored.date({ default: null }) },
  created_at: { read: { type: "date" } },
  updated_at: { read: { type: "date" } },
} as const;

export const deliveries = defineModel(deliveryFields, {
  name: "WebhookDelivery",
  keyed: true,
  collection: "webhook_deliveries",
  indexes: [[{ status: 1, next_attempt_at: 1 }], [{ account_id: 1, subscription_id: 1, created_at: -1, _id: -1 }]],
});
/** The deliveries model on a given connection. */
export const deliveryModel = deliveries.model;
export type WebhookDeliveryRecord = typeof deliveries.record;
/** A delivery as GET /webhook-subscriptions/{id}/deliveries lists it. */
export const Delivery = defineView("WebhookDelivery", deliveryFields);
