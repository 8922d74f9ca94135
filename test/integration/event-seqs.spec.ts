import type { Connection } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { changeCounts, changeOf, claimEvents, commitEvents, commitEventsGrouped, committedBefore, ensureEventIndexes, EVENT_QUEUE_COLLECTION, EVENTS_COLLECTION, HELD_BACK_MS, prepareEvents, pruneEvents, subjectOf } from "../../lib/events";
import { localPlan } from "../harness/query-shapes";
import { databaseUrl } from "../harness/servers";

/**
 * Event seqs from the change counters (lib/events.ts, docs/adr/0050-write-path-speed.md, fourth pass), on the real
 * local server: a commit counts each change of a record's collection in its account and takes the event's seq from
 * that count, so per record seqs ascend in the order of the changes, whichever process commits them; a consumer
 * gets a record's events in that order, behind any item a previous version queued with the log's former counter.
 */
describe("event seqs from the change counters", () => {
  let first: Connection;
  let second: Connection;
  const accountId = 41;
  const group = "webhooks";

  beforeAll(async () => {
    first = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "event_seqs"));
    await first.dropDatabase();
    second = first.useDb("event_seqs", { useCache: false });
    // The account has a webhook subscription, so its events are queued for the webhooks group.
    await first.collection("webhook_subscriptions").insertOne({ _id: 1, account_id: accountId } as never);
  });
  afterAll(() => closeAllDatabases());

  /**
   * Prepares and commits one change of tools/<id> through `db` (as a writer does), returning the event's id; the
   * commit says when the event was prepared (`preparedAt`) unless told not to, as a writer's does.
   */
  async function change(db: Connection, type: string, id: number, account = accountId, preparedAt: number | undefined = performance.now()): Promise<string> {
    const draft = changeOf(type, "tools", { _id: id, account_id: account });
    const [eventId] = await prepareEvents(db, [draft]);
    await commitEventsGrouped(db, [{ id: eventId!, type, account_id: account, subject: subjectOf(draft.record), data: { id }, preparedAt }]);
    return eventId!;
  }
  const queued = (subject: string) => first.collection<{ event: { id: string }; seq: number }>(EVENT_QUEUE_COLLECTION).find({ subject, group }).sort({ seq: 1 }).toArray();

  it("counts every change once and orders a record's events as its changes were made, across processes", async () => {
    const [before] = await changeCounts(first, accountId, ["tools"]);
    const made = [await change(first, "tool.created", 1), await change(second, "tool.updated", 1), await change(first, "tool.updated", 1)];
    // Concurrent commits of other records share counter updates and still get one seq each.
    await Promise.all([2, 3, 4].map((id) => change(id % 2 ? first : second, "tool.created", id)));

    expect((await queued("tools/1")).map((item) => item.event.id)).toEqual(made);
    const seqs = (await first.collection<{ seq: number }>(EVENT_QUEUE_COLLECTION).find({ group }).toArray()).map((item) => item.seq);
    expect(new Set(seqs).size).toBe(6);
    expect(await changeCounts(first, accountId, ["tools"])).toEqual([before + 6]);

    const { ready: claimed } = await claimEvents(first, group, "consumer", 60_000, 50);
    expect(claimed.filter((item) => item.subject === "tools/1").map((item) => item.event.id)).toEqual(made);
    expect(claimed).toHaveLength(6);
  });

  it("holds a record's new events behind an item queued with the former global counter's seq", async () => {
    const legacy = { _id: `${group}:evt_legacy`, group, subject: "tools/9", seq: 123_456, event: { id: "evt_legacy", type: "tool.created", account_id: accountId, subject: "tools/9", data: {}, occurred_at: new Date() } };
    // Queued later than the new event, so a claim by age takes the new one first.
    const newer = await change(first, "tool.updated", 9);
    await first.collection(EVENT_QUEUE_COLLECTION).insertOne({ ...legacy, claim_until: new Date(0), claimed_by: null, queued_at: new Date() } as never);

    expect(await claimEvents(first, group, "consumer-2", 60_000, 1)).toEqual({ ready: [], claimed: 1 }); // the new event is held back
    await new Promise((resolve) => setTimeout(resolve, HELD_BACK_MS + 5));
    // Claimed together once the hold is over, they come in the record's order.
    expect((await claimEvents(first, group, "consumer-2", 60_000, 50)).ready.map((item) => item.event.id)).toEqual(["evt_legacy", newer]);
  });

  it("keeps held-back events out of the claims that follow for a while, and counts them as claimed", async () => {
    const blocker = await change(first, "tool.created", 40);
    expect((await claimEvents(first, group, "elsewhere", 60_000, 1)).ready.map((item) => item.event.id)).toEqual([blocker]);
    await change(first, "tool.updated", 40);
    await change(first, "tool.updated", 40);
    const other = await change(first, "tool.created", 41);
    // The two updates are the oldest: held behind the created event that another claimer holds.
    expect(await claimEvents(first, group, "consumer-4", 60_000, 2)).toEqual({ ready: [], claimed: 2 });
    // The next claim, at once, takes what is behind them instead of the same two again.
    expect((await claimEvents(first, group, "consumer-4", 60_000, 2)).ready.map((item) => item.event.id)).toEqual([other]);
    await first.collection(EVENT_QUEUE_COLLECTION).deleteMany({ subject: { $in: ["tools/40", "tools/41"] } });
  });

  it("holds a record's events back only behind older events of the same group", async () => {
    const other = { _id: "search:evt_other_group", group: "search", subject: "tools/30", seq: 1, event: { id: "evt_other_group", type: "tool.created", account_id: accountId, subject: "tools/30", data: {}, occurred_at: new Date() } };
    await first.collection(EVENT_QUEUE_COLLECTION).insertOne({ ...other, claim_until: new Date(0), claimed_by: null, queued_at: new Date() } as never);
    const mine = await change(first, "tool.updated", 30);
    expect((await claimEvents(first, group, "consumer-3", 60_000, 50)).ready.map((item) => item.event.id)).toEqual([mine]);
  });

  it("gives a claim with a cutoff (a replica that was not woken) only what was queued before it, and a woken one the rest", async () => {
    const older = await change(first, "tool.created", 31);
    await new Promise((r) => setTimeout(r, 20));
    const cutoff = new Date();
    await new Promise((r) => setTimeout(r, 5));
    const newer = await change(first, "tool.created", 32);
    expect((await claimEvents(first, group, "polled", 60_000, 50, cutoff)).ready.map((item) => item.event.id)).toEqual([older]);
    expect((await claimEvents(first, group, "woken", 60_000, 50)).ready.map((item) => item.event.id)).toEqual([newer]);
  });

  it("prunes log entries committed before the cutoff, never a prepared one, through the committed_at index", async () => {
    const day = 86_400_000;
    const at = (days: number) => new Date(Date.now() - days * day);
    const entry = (id: string, state: string, occurred: Date, committed: Date | null) =>
      ({ _id: id, type: "tool.created", account_id: accountId, subject: "tools/90", data: {}, occurred_at: occurred, state, seq: null, committed_at: committed });
    await ensureEventIndexes(first); // as every service that writes events does at start
    await first.collection(EVENTS_COLLECTION).insertMany([
      entry("evt_prune_old", "committed", at(40), at(40)),
      entry("evt_prune_new", "committed", at(2), at(2)),
      entry("evt_prune_prepared", "prepared", at(40), null),
    ] as never[]);
    await pruneEvents(first, at(30), at(365));
    const left = await first.collection(EVENTS_COLLECTION).find({ _id: { $regex: "^evt_prune_" } } as never).toArray();
    expect(left.map((e) => e._id).sort()).toEqual(["evt_prune_new", "evt_prune_prepared"]);
    // On the local server the sweep reads a range of the committed_at index, not every committed entry.
    const plan = await localPlan(first.db!, { collection: EVENTS_COLLECTION, filter: committedBefore(at(30)) });
    if (plan) expect(plan.join("\n")).toMatch(/USING INDEX \S+_committed_at_1 \(<expr><\?\)/);
  });

  it("a settler's commit of an event counts and sequences it like a writer's", async () => {
    const draft = changeOf("tool.created", "tools", { _id: 20, account_id: accountId });
    const [eventId] = await prepareEvents(first, [draft]);
    const [before] = await changeCounts(first, accountId, ["tools"]);
    expect(await commitEvents(second, [{ id: eventId!, type: "tool.created", account_id: accountId, subject: "tools/20", data: { id: 20 } }])).toBe(1);
    const [item] = await queued("tools/20");
    expect(await changeCounts(first, accountId, ["tools"])).toEqual([before + 1]);
    expect(item!.seq).toBeGreaterThan(123_456);
  });

  it("queues nothing for the webhooks group in an account without subscriptions, and from its first subscription on", async () => {
    const other = 42;
    const item = async (eventId: string) => first.collection(EVENT_QUEUE_COLLECTION).findOne({ _id: `${group}:${eventId}` } as never);
    const before = await change(second, "tool.created", 30, other);
    expect(await item(before)).toBeNull();
    // A subscription created now (by another process) is seen by the next commit of every process.
    await first.collection("webhook_subscriptions").insertOne({ _id: 2, account_id: other } as never);
    const after = await change(second, "tool.created", 31, other);
    expect(await item(after)).toMatchObject({ group, subject: "tools/31" });
    // The first account's events are still queued, its subscription known without another look.
    expect(await item(await change(second, "tool.created", 32, accountId))).not.toBeNull();
  });

  it("takes a look that found no subscription as the answer for events prepared before it was sent, and no later one", async () => {
    const account = 43;
    const item = async (eventId: string) => first.collection(EVENT_QUEUE_COLLECTION).findOne({ _id: `${group}:${eventId}` } as never);
    const earlyPreparedAt = performance.now();
    const early = changeOf("tool.created", "tools", { _id: 40, account_id: account });
    const [earlyId] = await prepareEvents(second, [early]);
    // A later change's commit looks, and finds no subscription.
    expect(await item(await change(second, "tool.created", 41, account))).toBeNull();
    await first.collection("webhook_subscriptions").insertOne({ _id: 3, account_id: account } as never);
    // The early event's request came before the subscription existed: that look answers for it.
    await commitEventsGrouped(second, [{ id: earlyId!, type: "tool.created", account_id: account, subject: subjectOf(early.record), data: { id: 40 }, preparedAt: earlyPreparedAt }]);
    expect(await item(earlyId!)).toBeNull();
    // An event prepared after it, and one whose preparation this process does not know, make the commit look again.
    expect(await item(await change(second, "tool.created", 42, account))).toMatchObject({ group, subject: "tools/42" });
    expect(await item(await change(second, "tool.created", 43, account + 1, undefined))).toBeNull();
    await first.collection("webhook_subscriptions").insertOne({ _id: 4, account_id: account + 1 } as never);
    expect(await item(await change(second, "tool.created", 44, account + 1, undefined))).toMatchObject({ group, subject: "tools/44" });
    // A subscription's own creation is looked up after its write, whatever a look sent meanwhile found.
    const subscribing = account + 2;
    const preparedAt = performance.now();
    const created = changeOf("webhook_subscription.created", "webhook_subscriptions", { _id: 5, account_id: subscribing });
    const [createdId] = await prepareEvents(second, [created]);
    expect(await item(await change(second, "tool.created", 45, subscribing))).toBeNull();
    await first.collection("webhook_subscriptions").insertOne({ _id: 5, account_id: subscribing } as never);
    await commitEventsGrouped(second, [{ id: createdId!, type: created.type, account_id: subscribing, subject: subjectOf(created.record), data: { id: 5 }, preparedAt }]);
    expect(await item(createdId!)).toMatchObject({ group, subject: "webhook_subscriptions/5" });
  });
});
