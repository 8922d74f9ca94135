import type { Model } from "mongoose";
import type { WebhookDeliveryRecord, WebhookSubscriptionRecord } from "./model";
import { isDuplicateKeyError } from "../../lib/errors";
import type { ChangeEvent } from "../../lib/events";
import { deliveryBody, messageIdFor, receives, type AttemptResult } from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";

type Deliveries = Model<WebhookDeliveryRecord>;

/** A delivery written already claimed, to attempt at once, with the subscription it goes to. */
export interface ClaimedDelivery {
  delivery: WebhookDeliveryRecord;
  subscription: WebhookSubscriptionRecord;
}

/**
 * Writes one pending delivery per enabled subscription of the event's account that takes its type, each with
 * the webhook-id of (event, subscription) and the body every attempt will send. A redelivered event finds its
 * deliveries already there (same _id) and adds none. With `claim`, up to `claim.max` of them are written
 * claimed by `claim.owner` (their first attempt started), to be attempted at once without a claim of their
 * own (docs/adr/0050-write-path-speed.md); the rest wait for a dispatcher. Returns how many were new and the
 * claimed ones this call wrote. A batch of events costs one query for their accounts' subscriptions and one insert.
 */
export async function enqueueDeliveries(
  subscriptions: Model<WebhookSubscriptionRecord>,
  deliveries: Deliveries,
  events: ChangeEvent[],
  claim?: { owner: string; leaseMs: number; max: number },
): Promise<{ inserted: number; claimed: ClaimedDelivery[] }> {
  const accounts = [...new Set(events.map((e) => e.account_id))];
  const found =
    accounts.length === 1
      ? await subscriptions.find({ account_id: accounts[0]!, enabled: true }).lean<WebhookSubscriptionRecord[]>()
      : await crossAccount("the subscriptions of a batch of events' accounts", subscriptions.find({ account_id: { $in: accounts }, enabled: true })).lean<WebhookSubscriptionRecord[]>();
  const pairs = events.flatMap((event) => found.filter((s) => s.account_id === event.account_id && receives(s, event.type)).map((s) => ({ event, s })));
  if (!pairs.length) return { inserted: 0, claimed: [] };
  const now = new Date();
  const bodies = new Map<ChangeEvent, string>();
  const docs = pairs.map(({ event, s }, i) => ({
    _id: messageIdFor(event.id, s._id),
    subscription_id: s._id,
    account_id: event.account_id,
    type: event.type,
    body: bodies.get(event) ?? bodies.set(event, deliveryBody(event.type, event.data, event.occurred_at)).get(event)!,
    next_attempt_at: now,
    ...(claim && i < claim.max ? { attempts: 1, lease_owner: claim.owner, lease_expires_at: new Date(now.getTime() + claim.leaseMs) } : {}),
  }));
  let failed = new Set<number>();
  try {
    await deliveries.insertMany(docs, { ordered: false });
  } catch (err) {
    if (!isDuplicateKeyError(err) && !(err as { writeErrors?: unknown[] }).writeErrors?.length) throw err;
    const errors = (err as { writeErrors?: { code?: number; index?: number; err?: { code?: number; index?: number } }[] }).writeErrors ?? [];
    if (errors.some((e) => (e.code ?? e.err?.code) !== 11000)) throw err;
    // Without the failed entries' positions, claim nothing: the dispatchers take them when the lease runs out.
    const known = errors.length > 0 && errors.every((e) => typeof (e.index ?? e.err?.index) === "number");
    failed = known ? new Set(errors.map((e) => (e.index ?? e.err?.index)!)) : new Set(docs.map((_, i) => i));
  }
  const claimed = docs.flatMap((doc, i) =>
    doc.lease_owner && !failed.has(i)
      ? [{ delivery: { ...doc, status: "pending", last_status: null, last_error: null, delivered_at: null, created_at: now, updated_at: now } as WebhookDeliveryRecord, subscription: pairs[i]!.s }]
      : [],
  );
  return { inserted: docs.length - failed.size, claimed };
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
