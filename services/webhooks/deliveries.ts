import type { Model } from "mongoose";
import type { DeliveryStatus, WebhookDeliveryRecord, WebhookSubscriptionRecord } from "./model";
import { isDuplicateKeyError } from "../../lib/errors";
import type { ChangeEvent } from "../../lib/events";
import { deliveryBody, messageIdFor, receives, type AttemptResult } from "./rules";
import { keyedGroupCommit } from "../../lib/group-commit";
import { LeaseQueue, modelStore, type ItemEnding } from "../../lib/lease-queue";
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

/**
 * Claims up to `limit` of the most overdue pending deliveries for `owner`, with the subscriptions they go to: one
 * conditional update for all, so two dispatchers never send the same attempt, and one query for their subscriptions
 * (a delivery whose subscription is gone comes without one; its attempt looks again and fails it).
 */
export async function claimDeliveries(
  subscriptions: Model<WebhookSubscriptionRecord>,
  deliveries: Deliveries,
  owner: string,
  leaseMs: number,
  limit: number,
  now = new Date(),
): Promise<{ delivery: WebhookDeliveryRecord; subscription?: WebhookSubscriptionRecord }[]> {
  const claimed = await deliveryQueue(deliveries).claimBatch(owner, leaseMs, limit, { filter: { status: "pending" }, sort: { next_attempt_at: 1 }, now });
  if (!claimed.length) return [];
  const ids = [...new Set(claimed.map((d) => d.subscription_id))];
  const found = await crossAccount("the subscriptions of deliveries claimed across accounts", subscriptions.find({ _id: { $in: ids } })).lean<WebhookSubscriptionRecord[]>();
  return claimed.map((delivery) => ({ delivery, subscription: found.find((s) => s._id === delivery.subscription_id && s.account_id === delivery.account_id) }));
}

type Finished = Pick<WebhookDeliveryRecord, "_id" | "account_id">;

/** How an attempt's result ends its lease: released for a retry, or completed (delivered or failed). */
function ending(result: AttemptResult, now: Date): ItemEnding {
  const outcome = { last_status: result.httpStatus, last_error: result.status === "delivered" ? null : result.error };
  if (result.status === "pending") return { release: { retryAt: result.nextAttemptAt, set: outcome } };
  const ended = result.status === "delivered" ? { status: "delivered", delivered_at: now } : { status: "failed" };
  return { complete: { set: { ...ended, ...outcome } } };
}

const keyOf = (delivery: Finished) => ({ _id: delivery._id, account_id: delivery.account_id });

/** Records an attempt's result and frees the lease; false when the lease was lost (another dispatcher took over). */
export async function finishAttempt(deliveries: Deliveries, delivery: Finished, owner: string, result: AttemptResult): Promise<boolean> {
  return (await deliveryQueue(deliveries).finishEach(owner, [{ key: keyOf(delivery), ...ending(result, new Date()) }])) > 0;
}

/**
 * finishAttempt for a caller that needs no answer: the results of attempts that end while a record is on its way go
 * together in one command (docs/adr/0050-write-path-speed.md, sixth pass).
 */
export function finishAttemptGrouped(deliveries: Deliveries, delivery: Finished, owner: string, result: AttemptResult): Promise<void> {
  let finish = finishers.get(deliveries);
  if (!finish) {
    const record = async (by: string, ended: { delivery: Finished; result: AttemptResult }[]) => {
      const now = new Date();
      await deliveryQueue(deliveries).finishEach(by, ended.map(({ delivery, result }) => ({ key: keyOf(delivery), ...ending(result, now) })));
      return ended.map(() => undefined);
    };
    finishers.set(deliveries, (finish = keyedGroupCommit(record)));
  }
  return finish(owner, { delivery, result });
}

const finishers = new WeakMap<Deliveries, (owner: string, attempt: { delivery: Finished; result: AttemptResult }) => Promise<void>>();

/**
 * Finished deliveries last changed before `olderThan`. A finished delivery's last attempt was due before it ended
 * (next_attempt_at <= updated_at), so bounding next_attempt_at too leaves out none of them and lets the
 * {status, next_attempt_at} index bound a sweep to what it deletes, not every finished delivery of the retention period.
 */
export function finishedBefore(olderThan: Date) {
  return { status: { $in: ["delivered", "failed"] as DeliveryStatus[] }, next_attempt_at: { $lt: olderThan }, updated_at: { $lt: olderThan } };
}

/** Deletes finished deliveries older than the retention period (no TTL indexes on this database). */
export async function pruneDeliveries(deliveries: Deliveries, olderThan: Date): Promise<number> {
  const res = await crossAccount("retention sweep over every account", deliveries.deleteMany(finishedBefore(olderThan)));
  return res.deletedCount;
}
