import type { Connection } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { claimDeliveries, finishedBefore, pruneDeliveries } from "../../services/webhooks/deliveries";
import { deliveryModel, subscriptionModel } from "../../services/webhooks/model";
import { localPlan } from "../harness/query-shapes";
import { databaseUrl } from "../harness/servers";

/**
 * A dispatcher's claim (services/webhooks/deliveries.ts claimDeliveries, docs/adr/0050-write-path-speed.md, fifth
 * pass), on the real local server: the most overdue due deliveries nobody holds, up to the free slots, each counted
 * as an attempt and leased to the dispatcher, with the subscription it goes to; concurrent dispatchers never take
 * one delivery twice.
 */
describe("dispatchers claim deliveries in batches", () => {
  let db: Connection;
  const now = new Date("2026-11-28T12:00:00Z");
  const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);

  beforeAll(async () => {
    db = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "delivery_claims"));
    await db.dropDatabase();
    await subscriptionModel(db).collection.insertMany([
      { _id: 1, account_id: 1, url: "http://127.0.0.1:9/a", event_types: [], enabled: true, secret_sealed: "x" },
      { _id: 2, account_id: 2, url: "http://127.0.0.1:9/b", event_types: [], enabled: true, secret_sealed: "y" },
    ] as never[]);
    const delivery = (n: number, subscription: number, dueSecondsAgo: number, extra: object = {}) => ({
      _id: `msg_${n}`,
      subscription_id: subscription,
      account_id: subscription === 3 ? 1 : subscription,
      type: "tool.created",
      body: "{}",
      attempts: 0,
      next_attempt_at: ago(dueSecondsAgo),
      status: "pending",
      lease_owner: null,
      lease_expires_at: new Date(0),
      ...extra,
    });
    await deliveryModel(db).collection.insertMany([
      delivery(1, 1, 50),
      delivery(2, 2, 60),
      delivery(3, 1, 40),
      delivery(4, 2, 30),
      // Subscription 3 was deleted meanwhile.
      delivery(5, 3, 20),
      delivery(6, 1, 10),
      // Not due yet; held by another dispatcher; finished.
      delivery(7, 1, -60),
      delivery(8, 2, 70, { lease_owner: "other", lease_expires_at: new Date(now.getTime() + 60_000), attempts: 1 }),
      delivery(9, 1, 80, { status: "delivered" }),
    ] as never[]);
  });
  afterAll(() => closeAllDatabases());

  it("takes the most overdue first, up to the limit, each with its subscription, an attempt and the lease", async () => {
    const claimed = await claimDeliveries(subscriptionModel(db), deliveryModel(db), "me", 60_000, 3, now);
    expect(claimed.map(({ delivery }) => delivery._id)).toEqual(["msg_2", "msg_1", "msg_3"]);
    expect(claimed.map(({ subscription }) => subscription?._id)).toEqual([2, 1, 1]);
    for (const { delivery } of claimed) expect(delivery).toMatchObject({ attempts: 1, lease_owner: "me", lease_expires_at: new Date(now.getTime() + 60_000) });
  });

  it("splits the rest between concurrent dispatchers, none twice; a delivery whose subscription is gone comes without one", async () => {
    const [a, b] = await Promise.all([
      claimDeliveries(subscriptionModel(db), deliveryModel(db), "a", 60_000, 10, now),
      claimDeliveries(subscriptionModel(db), deliveryModel(db), "b", 60_000, 10, now),
    ]);
    const ids = [...a!, ...b!].map(({ delivery }) => delivery._id).sort();
    expect(ids).toEqual(["msg_4", "msg_5", "msg_6"]);
    expect([...a!, ...b!].find(({ delivery }) => delivery._id === "msg_5")!.subscription).toBeUndefined();
    expect(await claimDeliveries(subscriptionModel(db), deliveryModel(db), "c", 60_000, 10, now)).toEqual([]);
    const held = await deliveryModel(db).collection.find({ lease_owner: { $in: ["a", "b"] } }).toArray();
    expect(held.map((d) => [d._id, d.attempts]).sort()).toEqual([["msg_4", 1], ["msg_5", 1], ["msg_6", 1]]);
  });

  it("prunes finished deliveries last changed before the cutoff, and nothing pending or newer", async () => {
    const days = (n: number) => new Date(now.getTime() - n * 86_400_000);
    const finished = (n: number, status: string, due: Date, changed: Date) =>
      ({ _id: `old_${n}`, subscription_id: 1, account_id: 1, type: "tool.created", body: "{}", attempts: 1, next_attempt_at: due, status, lease_owner: null, lease_expires_at: new Date(0), updated_at: changed });
    await deliveryModel(db).collection.insertMany([
      finished(1, "delivered", days(40), days(40)),
      finished(2, "failed", days(33), days(31)),
      // Due before the cutoff, ended after it (retried for a day and a half): kept.
      finished(3, "failed", days(31), days(29)),
      finished(4, "delivered", days(2), days(2)),
      finished(5, "pending", days(45), days(45)),
    ] as never[]);
    expect(await pruneDeliveries(deliveryModel(db), days(30))).toBe(2);
    const left = await deliveryModel(db).collection.find({ _id: { $regex: "^old_" } } as never).toArray();
    expect(left.map((d) => d._id).sort()).toEqual(["old_3", "old_4", "old_5"]);
    // On the local server the sweep reads a range of the {status, next_attempt_at} index, not every finished delivery.
    const plan = await localPlan(db.db!, { collection: "webhook_deliveries", filter: finishedBefore(days(30)) });
    if (plan) expect(plan.join("\n")).toMatch(/USING INDEX \S+_status_1_next_attempt_at_1 \(<expr>=\? AND <expr><\?\)/);
  });
});
