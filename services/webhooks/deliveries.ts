import type { Model } from "mongoose";
import type { WebhookDeliveryRecord, WebhookSubscriptionRecord } from "./model";
import { isDuplicateKeyError } from "../../lib/errors";
import type { ChangeEvent } from "../../lib/events";
import { deliveryBody, messageIdFor, receives, type AttemptResult } from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";

type Deliveries = Model<WebhookDeliveryRecord>;

/**
 * Writes one pending delivery per enabled subscription of the account that takes this event type, each with
 * the webhook-id of (event, subscription) and the body every attempt will send. A redelivered event finds its
 * deliveries already there (same _id) and adds none. Returns how many were new.
 */
export async function enqueueDeliveries(subscriptions: Model<WebhookSubscriptionRecord>, deliveries: Deliveries, event: ChangeEvent): Promise<number> {
  const candidates = await subscriptions.find({ account_id: event.account_id, enabled: true }, { event_types: 1, enabled: 1 }).lean();
  const targets = candidates.filter((s) => receives(s, event.type));
  if (!targets.length) return 0;
  const body = deliveryBody(event.type, event.data, event.occurred_at);
  const docs = targets.map((s) => ({
    _id: messageIdFor(event.id, s._id),
    subscription_id: s._id,
    account_id: event.account_id,
    type: event.type,
    body,
    next_attempt_at: new Date(),
  }));
  try {
    return (await deliveries.insertMany(docs, { ordered: false })).length;
  } catch (err) {
    if (!isDuplicateKeyError(err) && !(err as { writeErrors?: unknown[] }).writeErrors?.length) throw err;
    const errors = (err as { writeErrors?: { code?: number; err?: { code?: number } }[] }).writeErrors ?? [];
    if (errors.some((e) => (e.code ?? e.err?.code) !== 11000)) throw err;
    return docs.length - errors.length;
  }
}

/**
 * Claims the most overdue pending delivery nobody holds (or whose holder's lease ran out: it died) for `owner`.
 * One atomic update per claim, so two dispatchers never send the same attempt.
 */
export function claimDelivery(deliveries: Deliveries, owner: string, leaseMs: number, now = new Date()): Promise<WebhookDeliveryRecord | null> {
  const claim = deliveries.findOneAndUpdate(
    { status: "pending", next_attempt_at: { $lte: now }, lease_expires_at: { $lt: now } },
    { $set: { lease_owner: owner, lease_expires_at: new Date(now.getTime() + leaseMs) }, $inc: { attempts: 1 } },
    { sort: { next_attempt_at: 1 }, returnDocument: "after" },
  );
  return crossAccount("dispatchers claim the most overdue delivery of any account", claim).lean<WebhookDeliveryRecord>();
}

/** Records an attempt's result and frees the lease; false when the lease was lost (another dispatcher took over). */
export async function finishAttempt(deliveries: Deliveries, delivery: Pick<WebhookDeliveryRecord, "_id" | "account_id">, owner: string, result: AttemptResult): Promise<boolean> {
  const now = new Date();
  const fields =
    result.status === "delivered"
      ? { status: "delivered", last_status: result.httpStatus, last_error: null, delivered_at: now }
      : result.status === "pending"
        ? { next_attempt_at: result.nextAttemptAt, last_status: result.httpStatus, last_error: result.error }
        : { status: "failed", last_status: result.httpStatus, last_error: result.error };
  const res = await deliveries.updateOne(
    { _id: delivery._id, account_id: delivery.account_id, lease_owner: owner, status: "pending" },
    { $set: { ...fields, lease_owner: null, lease_expires_at: new Date(0) } },
  );
  return res.matchedCount === 1;
}

/** Deletes finished deliveries older than the retention period (no TTL indexes on this database). */
export async function pruneDeliveries(deliveries: Deliveries, olderThan: Date): Promise<number> {
  const res = await crossAccount("retention sweep over every account", deliveries.deleteMany({ status: { $in: ["delivered", "failed"] }, updated_at: { $lt: olderThan } }));
  return res.deletedCount;
}
