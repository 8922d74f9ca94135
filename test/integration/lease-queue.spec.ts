import { Schema, type Connection } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { collectionStore, DueQueue, LeaseQueue, modelStore, type LeaseQueueOptions, type QueueStore } from "../../lib/lease-queue";
import { jobQueue } from "../../services/knowledge/jobs";
import { deliveryQueue } from "../../services/webhooks/deliveries";

/**
 * The lease-queue contract (lib/lease-queue.ts, docs/adr/0053-one-lease-queue.md), on the real local server and
 * through both stores: a mongoose model (tenancy guard on: claims span accounts by a stated reason) and a raw
 * collection. Time is passed to claims explicitly (`now`), so expiry and backoff are shown without sleeping.
 */

interface Item {
  _id: number;
  account_id: number;
  status: "pending" | "done";
  lease_owner: string | null;
  lease_expires_at: Date;
  next_attempt_at: Date | null;
  attempts: number;
}

const itemSchema = new Schema<Item>(
  {
    _id: Number,
    account_id: { type: Number, required: true },
    status: { type: String, default: "pending" },
    lease_owner: { type: String, default: null },
    lease_expires_at: { type: Date, default: () => new Date(0) },
    next_attempt_at: { type: Date, default: null },
    attempts: { type: Number, default: 0 },
  },
  { versionKey: false },
);

/** Webhook deliveries' queue: a separate due field, the epoch as a free lease, one attempt counted per claim. */
const WITH_DUE: LeaseQueueOptions = { ...deliveryQueue(null as never).options, crossAccount: "the contract test claims items of every account" };
/** Like the event queue: the lease's end is also when a released item is due again. */
const UNTIL_IS_DUE: LeaseQueueOptions = { ...WITH_DUE, due: undefined };

const SECOND = 1000;
const at = (base: Date, ms: number) => new Date(base.getTime() + ms);
const keyOf = (item: Pick<Item, "_id" | "account_id">) => ({ _id: item._id, account_id: item.account_id });

interface Setup {
  name: string;
  store(db: Connection): QueueStore<Item>;
}
const SETUPS: Setup[] = [
  { name: "a mongoose model (tenancy guard on)", store: (db) => modelStore(db.models.LeaseItem ?? db.model<Item>("LeaseItem", itemSchema, "lease_items")) },
  { name: "a raw collection", store: (db) => collectionStore(db.collection<Item>("lease_items_raw")) },
];

describe.each(SETUPS)("lease queue over $name", ({ store: storeOf }) => {
  let db: Connection;
  let store: QueueStore<Item>;
  const queue = (options: LeaseQueueOptions = WITH_DUE) => new LeaseQueue(store, options);

  beforeAll(async () => {
    const url = new URL(process.env.TEST_MONGO_URL!);
    url.pathname = "/lease_queue";
    db = await connectDatabase(url.toString());
    store = storeOf(db);
  });
  afterAll(() => closeAllDatabases());

  /** Writes `count` pending items, due one second apart from `due` (ids in due order), spread over three accounts. */
  async function seed(count: number, due: Date, extra: Partial<Item> = {}): Promise<void> {
    const raw = db.collection("lease_items");
    const rawToo = db.collection("lease_items_raw");
    await Promise.all([raw.deleteMany({}), rawToo.deleteMany({})]);
    const items = Array.from({ length: count }, (_, i) => ({
      _id: i + 1,
      account_id: (i % 3) + 1,
      status: "pending",
      lease_owner: null,
      lease_expires_at: new Date(0),
      next_attempt_at: at(due, i * SECOND),
      attempts: 0,
      ...extra,
    }));
    if (items.length) await Promise.all([raw.insertMany(items as never[]), rawToo.insertMany(items.map((i) => ({ ...i })) as never[])]);
  }

  it("claim exclusivity: of many concurrent claimers each item goes to exactly one, once", async () => {
    const now = new Date();
    await seed(60, at(now, -120 * SECOND));
    const claimers = Array.from({ length: 12 }, (_, i) => `node-${i}`);
    const won = await Promise.all(
      claimers.map(async (owner) => {
        const mine: number[] = [];
        for (let item = await queue().claim(owner, 60 * SECOND, { now }); item; item = await queue().claim(owner, 60 * SECOND, { now })) {
          expect(item.lease_owner).toBe(owner);
          mine.push(item._id);
        }
        return mine;
      }),
    );
    const all = won.flat().sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const stored = await store.find({ account_id: { $in: [1, 2, 3] } }, {});
    expect(stored.every((item) => item.attempts === 1)).toBe(true);
    for (const [i, owner] of claimers.entries()) {
      expect(stored.filter((item) => item.lease_owner === owner).map((item) => item._id).sort((a, b) => a - b)).toEqual([...won[i]!].sort((a, b) => a - b));
    }
  });

  it("claim exclusivity in batches: concurrent batch claimers split the items, none twice", async () => {
    const now = new Date();
    await seed(50, at(now, -120 * SECOND));
    const won = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const mine: number[] = [];
        for (;;) {
          const batch = await queue(UNTIL_IS_DUE).claimBatch(`node-${i}`, 60 * SECOND, 7, { sort: { _id: 1 }, now });
          if (!batch.length) {
            // Every item was claimable before and the lease is a minute: none left means all are held.
            if ((await store.find({ account_id: { $in: [1, 2, 3] }, lease_owner: null }, {})).length === 0) return mine;
            continue;
          }
          expect(batch.map((item) => item._id)).toEqual([...batch.map((item) => item._id)].sort((a, b) => a - b));
          mine.push(...batch.map((item) => item._id));
        }
      }),
    );
    expect(won.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it("a batch claimer that lost every candidate to another between its find and its update claims the next ones", async () => {
    const now = new Date();
    await seed(10, at(now, -120 * SECOND));
    const rival = queue(UNTIL_IS_DUE);
    let raced = false;
    // The real store, with the rival's claim run once right after this claimer's first find.
    const racedStore: QueueStore<Item> = {
      ...store,
      find: async (filter, options, reason) => {
        const found = await store.find(filter, options, reason);
        if (!raced && options.limit) {
          raced = true;
          await rival.claimBatch("rival", 60 * SECOND, 4, { sort: { _id: 1 }, now });
        }
        return found;
      },
    };
    const batch = await new LeaseQueue(racedStore, UNTIL_IS_DUE).claimBatch("late", 60 * SECOND, 4, { sort: { _id: 1 }, now });
    expect(batch.map((item) => item._id)).toEqual([5, 6, 7, 8]);
    const stored = await store.find({ account_id: { $in: [1, 2, 3] } }, { sort: { _id: 1 } });
    expect(stored.slice(0, 8).map((item) => item.lease_owner)).toEqual(["rival", "rival", "rival", "rival", "late", "late", "late", "late"]);
  });

  it("due-claim: only due items are claimed, most overdue first", async () => {
    const now = new Date();
    await seed(5, now);
    // Due times out of id order: 2, 3, 1 are due (2 the most overdue), 5 and 4 come later.
    const offsets = { 1: -1, 2: -3, 3: -2, 4: 5, 5: 4 };
    for (const name of ["lease_items", "lease_items_raw"]) {
      for (const [id, offset] of Object.entries(offsets)) await db.collection(name).updateOne({ _id: Number(id) } as never, { $set: { next_attempt_at: at(now, offset * SECOND) } });
    }
    const claimNext = (when: Date) => queue().claim("a", 60 * SECOND, { sort: { next_attempt_at: 1 }, now: when });
    const claimed: number[] = [];
    for (let item = await claimNext(now); item; item = await claimNext(now)) claimed.push(item._id);
    expect(claimed).toEqual([2, 3, 1]);
    // The later ones come when their time does, again in order.
    expect((await claimNext(at(now, 10 * SECOND)))?._id).toBe(5);
    expect((await claimNext(at(now, 10 * SECOND)))?._id).toBe(4);
    expect(await claimNext(at(now, 10 * SECOND))).toBeNull();
  });

  it("lease expiry and takeover: a held item is not claimable; once its lease ends another takes it, and the first loses every write", async () => {
    const now = new Date();
    await seed(1, at(now, -60 * SECOND));
    const first = await queue().claim("a", 30 * SECOND, { now });
    expect(first).toMatchObject({ _id: 1, lease_owner: "a", attempts: 1 });
    expect(first!.lease_expires_at.getTime()).toBe(now.getTime() + 30 * SECOND);
    expect(await queue().claim("b", 30 * SECOND, { now: at(now, 29 * SECOND) })).toBeNull();

    const taken = await queue().claim("b", 30 * SECOND, { now: at(now, 31 * SECOND) });
    expect(taken).toMatchObject({ _id: 1, lease_owner: "b", attempts: 2 });
    expect(await queue().renew(keyOf(first!), "a", 30 * SECOND)).toBe(false);
    expect(await queue().write(keyOf(first!), "a", { attempts: 99 })).toBe(false);
    expect(await queue().release(keyOf(first!), "a")).toBe(false);
    expect(await queue().complete(keyOf(first!), "a", { set: { status: "done" } })).toBe(false);
    expect((await store.find({ _id: 1, account_id: 1 }, {}))[0]).toMatchObject({ lease_owner: "b", attempts: 2, status: "pending" });

    expect(await queue().complete(keyOf(taken!), "b", { set: { status: "done" } })).toBe(true);
    expect((await store.find({ _id: 1, account_id: 1 }, {}))[0]).toMatchObject({ status: "done", lease_owner: null, lease_expires_at: new Date(0) });
    // Done is not held: nothing claims or renews it any more.
    expect(await queue().claim("c", 30 * SECOND, { filter: { status: "pending" }, now: at(now, 3600 * SECOND) })).toBeNull();
    expect(await queue().renew(keyOf(taken!), "b", 30 * SECOND)).toBe(false);
  });

  it("renew: the holder extends its lease, so the item outlives the first lease; others cannot renew it", async () => {
    const now = new Date();
    await seed(1, at(now, -60 * SECOND));
    const item = await queue().claim("a", 30 * SECOND, { now });
    expect(await queue().renew(keyOf(item!), "b", 300 * SECOND)).toBe(false);
    const before = Date.now();
    expect(await queue().renew(keyOf(item!), "a", 300 * SECOND)).toBe(true);
    const stored = (await store.find({ _id: 1, account_id: 1 }, {}))[0]!;
    expect(stored.lease_owner).toBe("a");
    expect(stored.lease_expires_at.getTime()).toBeGreaterThanOrEqual(before + 300 * SECOND);
    // Past the first lease's end, still held.
    expect(await queue().claim("b", 30 * SECOND, { now: at(now, 60 * SECOND) })).toBeNull();
  });

  it("release with backoff: not claimable before the retry time, claimable after; a plain release is claimable at once", async () => {
    for (const options of [WITH_DUE, UNTIL_IS_DUE]) {
      const now = new Date();
      await seed(1, at(now, -60 * SECOND));
      const item = await queue(options).claim("a", 30 * SECOND, { now });
      const retryAt = at(now, 120 * SECOND);
      expect(await queue(options).release(keyOf(item!), "b", { retryAt })).toBe(false);
      expect(await queue(options).release(keyOf(item!), "a", { retryAt, set: { attempts: 7 } })).toBe(true);
      expect((await store.find({ _id: 1, account_id: 1 }, {}))[0]).toMatchObject({ lease_owner: null, attempts: 7 });
      // Not due before retryAt (even though the lease it had would have ended by then).
      expect(await queue(options).claim("b", 30 * SECOND, { now: at(now, 60 * SECOND) })).toBeNull();
      expect(await queue(options).claim("b", 30 * SECOND, { now: at(retryAt, -1) })).toBeNull();
      const again = await queue(options).claim("b", 30 * SECOND, { now: at(retryAt, 1) });
      expect(again).toMatchObject({ _id: 1, lease_owner: "b", attempts: 8 });

      expect(await queue(options).release(keyOf(again!), "b")).toBe(true);
      expect(await queue(options).claim("c", 30 * SECOND, { now: at(retryAt, 2) })).toMatchObject({ _id: 1, lease_owner: "c" });
    }
  });

  it("a status-based queue (load-job style): a claim sets the item running, a release sets it pending with no lease, an expired running item is taken over", async () => {
    const JOBS: LeaseQueueOptions = { ...jobQueue(null as never).options, crossAccount: "the contract test claims items of every account" };
    const now = new Date();
    await seed(1, now, { lease_expires_at: null as never });
    const item = await queue(JOBS).claim("a", 30 * SECOND, { now });
    expect(item).toMatchObject({ status: "running", lease_owner: "a", attempts: 1 });
    expect(await queue(JOBS).claim("b", 30 * SECOND, { now: at(now, 29 * SECOND) })).toBeNull();
    expect(await queue(JOBS).release(keyOf(item!), "a")).toBe(true);
    expect((await store.find({ _id: 1, account_id: 1 }, {}))[0]).toMatchObject({ status: "pending", lease_owner: null, lease_expires_at: null });
    expect(await queue(JOBS).claim("b", 30 * SECOND, { now })).toMatchObject({ status: "running", lease_owner: "b", attempts: 2 });
    expect(await queue(JOBS).claim("c", 30 * SECOND, { now: at(now, 31 * SECOND) })).toMatchObject({ lease_owner: "c", attempts: 3 });
    expect(await queue(JOBS).write(keyOf(item!), "b", { attempts: 0 })).toBe(false);
  });

  it("finishing several at once: each held item is released or completed its own way; one the owner lost is left alone", async () => {
    const now = new Date();
    await seed(3, at(now, -60 * SECOND));
    const held = await queue().claimBatch("a", 30 * SECOND, 3, { sort: { _id: 1 }, now });
    expect(held.map((item) => item._id)).toEqual([1, 2, 3]);
    // Item 3's lease ran out and "b" took it over.
    expect(await queue().claim("b", 30 * SECOND, { filter: { _id: 3 }, now: at(now, 31 * SECOND) })).toMatchObject({ _id: 3, lease_owner: "b" });
    const retryAt = at(now, 120 * SECOND);
    const finished = await queue().finishEach("a", [
      { key: keyOf(held[0]!), complete: { set: { status: "delivered" } } },
      { key: keyOf(held[1]!), release: { retryAt, set: { attempts: 9 } } },
      { key: keyOf(held[2]!), complete: { set: { status: "delivered" } } },
    ]);
    expect(finished).toBe(2);
    const stored = await store.find({ account_id: { $in: [1, 2, 3] } }, { sort: { _id: 1 } });
    expect(stored[0]).toMatchObject({ status: "delivered", lease_owner: null });
    expect(stored[1]).toMatchObject({ status: "pending", lease_owner: null, attempts: 9, next_attempt_at: retryAt });
    expect(stored[2]).toMatchObject({ status: "pending", lease_owner: "b" });
    expect(await queue().finishEach("a", [])).toBe(0);
  });

  it("complete with removal deletes only what the owner holds", async () => {
    const now = new Date();
    await seed(4, at(now, -60 * SECOND));
    const held = await queue(UNTIL_IS_DUE).claimBatch("a", 30 * SECOND, 2, { sort: { _id: 1 }, now });
    expect(held.map((item) => item._id)).toEqual([1, 2]);
    expect(await queue(UNTIL_IS_DUE).complete({ _id: { $in: [1, 2, 3] }, account_id: { $in: [1, 2, 3] } }, "a", { remove: true })).toBe(true);
    expect((await store.find({ account_id: { $in: [1, 2, 3] } }, { sort: { _id: 1 } })).map((item) => item._id)).toEqual([3, 4]);
  });
});

describe("due queue (recurring items) over a mongoose model", () => {
  let db: Connection;
  let due: DueQueue<Item>;

  beforeAll(async () => {
    const url = new URL(process.env.TEST_MONGO_URL!);
    url.pathname = "/lease_queue";
    db = await connectDatabase(url.toString());
    const model = db.models.LeaseItem ?? db.model<Item>("LeaseItem", itemSchema, "lease_items");
    due = new DueQueue(modelStore(model), { due: "next_attempt_at", crossAccount: "the contract test lists due items of every account" });
  });
  afterAll(() => closeAllDatabases());

  it("lists only due items, most overdue first; of concurrent claims of one occurrence exactly one wins; a changed item is not claimed", async () => {
    const now = new Date();
    const raw = db.collection("lease_items");
    await raw.deleteMany({});
    await raw.insertMany([
      { _id: 1, account_id: 1, status: "pending", next_attempt_at: at(now, -5 * SECOND) },
      { _id: 2, account_id: 2, status: "pending", next_attempt_at: at(now, -10 * SECOND) },
      { _id: 3, account_id: 1, status: "pending", next_attempt_at: at(now, 10 * SECOND) },
      { _id: 4, account_id: 3, status: "done", next_attempt_at: at(now, -20 * SECOND) },
      { _id: 5, account_id: 3, status: "pending", next_attempt_at: null },
    ] as never[]);

    const listed = await due.list(now, 10, { filter: { status: "pending" } });
    expect(listed.map((item) => item._id)).toEqual([2, 1]);
    expect((await due.list(now, 1, { filter: { status: "pending" } })).map((item) => item._id)).toEqual([2]);

    const [first] = listed;
    const next = at(now, 60 * SECOND);
    const claims = await Promise.all(
      Array.from({ length: 10 }, () => due.claim(keyOf(first!), first!.next_attempt_at, next, { match: { status: "pending" }, update: { $inc: { attempts: 1 } } })),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(claims.find(Boolean)).toMatchObject({ _id: 2, next_attempt_at: next, attempts: 1 });
    // Claimed: the occurrence moved on, so it is no longer listed or claimable by the time read before.
    expect((await due.list(now, 10, { filter: { status: "pending" } })).map((item) => item._id)).toEqual([1]);
    expect(await due.claim(keyOf(first!), first!.next_attempt_at, next)).toBeNull();

    // Changed since it was read (status): not claimed.
    const second = listed[1]!;
    await raw.updateOne({ _id: 1 } as never, { $set: { status: "done" } });
    expect(await due.claim(keyOf(second), second.next_attempt_at, next, { match: { status: "pending" } })).toBeNull();
  });
});
