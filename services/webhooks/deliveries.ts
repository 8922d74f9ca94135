import type { Model } from "mongoose";
import type { WebhookDeliveryRecord, WebhookSubscriptionRecord } from "./model";
import { isDuplicateKeyError } from "../../lib/errors";
import type { ChangeEvent } from "../../lib/events";
import { deliveryBody, messageIdFor, receives, type AttemptResult } from "./rules";
import { LeaseQueue, modelStore } from "../../lib/lease-queue";
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
 * The delivery queue (lib/lease-queue.ts): a pending delivery is claimable once due (next_attempt_at) and nobody
 * holds it (or its holder's lease ran out: it died); each claim counts an attempt.
 */
export function deliveryQueue(deliveries: Deliveries): LeaseQueue<WebhookDeliveryRecord> {
  return new LeaseQueue(modelStore(deliveries), {
    owner: "lease_owner",
    until: "lease_expires_at",
    vacant: new Date(0),
    due: "next_attempt_at",
    held: { status: "pending" },
    onClaim: { $inc: { attempts: 1 } },
    crossAccount: "dispatchers claim the most overdue delivery of any account",
  });
}

/** Claims the most overdue pending delivery for `owner`: one atomic update, so two dispatchers never send the same attempt. */
export function claimDelivery(deliveries: Deliveries, owner: string, leaseMs: number, now = new Date()): Promise<WebhookDeliveryRecord | null> {
  return deliveryQueue(deliveries).claim(owner, leaseMs, { filter: { status: "pending" }, sort: { next_attempt_at: 1 }, now });
}

/** Records an attempt's result and frees the lease; false when the lease was lost (another dispatcher took over). */
export function finishAttempt(deliveries: Deliveries, delivery: Pick<WebhookDeliveryRecord, "_id" | "account_id">, owner: string, result: AttemptResult): Promise<boolean> {
  const queue = deliveryQueue(deliveries);
  const key = { _id: delivery._id, account_id: delivery.account_id };
  const outcome = { last_status: result.httpStatus, last_error: result.status === "delivered" ? null : result.error };
  if (result.status === "pending") return queue.release(key, owner, { retryAt: result.nextAttemptAt, set: outcome });
  const ended = result.status === "delivered" ? { status: "delivered", delivered_at: new Date() } : { status: "failed" };
  return queue.complete(key, owner, { set: { ...ended, ...outcome } });
}

/** Deletes finished deliveries older than the retention period (no TTL indexes on this database). */
export async function pruneDeliveries(deliveries: Deliveries, olderThan: Date): Promise<number> {
  const res = await crossAccount("retention sweep over every account", deliveries.deleteMany({ status: { $in: ["delivered", "failed"] }, updated_at: { $lt: olderThan } }));
  return res.deletedCount;
}
