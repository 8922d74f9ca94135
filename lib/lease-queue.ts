import type { Collection, Document } from "mongodb";
import type { Model, Query } from "mongoose";
import { crossAccount } from "./tenancy-guard";

/**
 * Work shared by replicas, as documents (docs/adr/0053-one-lease-queue.md). Two kinds of queue, each claimed
 * with atomic conditional updates, so of several replicas claiming at once exactly one wins an item:
 * - a LeaseQueue hands an item to one holder for a while (a lease: owner + until); the holder renews it, writes
 *   only while it holds it, and releases it (possibly to be retried later) or completes it; an item whose lease
 *   ran out (its holder died) is claimed again;
 * - a DueQueue hands out occurrences: a claim moves the item's due time on from the value the replica read, so
 *   each occurrence is claimed once and there is no lease to keep.
 * No multi-document transactions: every step is one update, on either store.
 */

type Filter = Record<string, unknown>;
type Sort = Record<string, 1 | -1>;
/** The updates a queue makes: fields set and counters incremented. */
export interface QueueUpdate {
  $set?: Filter;
  $inc?: Record<string, number>;
}
interface FindOptions {
  sort?: Sort;
  limit?: number;
  projection?: Record<string, 1>;
}

/**
 * Where a queue's items live, behind one port: a mongoose model (its tenancy guard and timestamps apply) or a
 * raw collection. `reason` is the cross-account reason of a query that spans accounts (claims, due lists).
 */
export interface QueueStore<T> {
  find(filter: Filter, options: FindOptions, reason?: string): Promise<T[]>;
  /** Updates the first match (by `sort`) and returns it as updated, or null when nothing matched. */
  claimOne(filter: Filter, update: QueueUpdate, sort: Sort | undefined, reason?: string): Promise<T | null>;
  /** Updates every match; returns how many matched. */
  update(filter: Filter, update: QueueUpdate, reason?: string): Promise<number>;
  /** Updates the one match of each filter with its update, all in one command; returns how many matched. */
  updateEach(updates: { filter: Filter; update: QueueUpdate }[]): Promise<number>;
  /** Deletes every match; returns how many went. */
  remove(filter: Filter): Promise<number>;
}

/** A store over a mongoose model; `timestamps: false` leaves updated_at to client edits (run bookkeeping). */
export function modelStore<T>(model: Model<T>, options: { timestamps?: false } = {}): QueueStore<T> {
  const across = <Q extends Query<any, any>>(query: Q, reason?: string): Q => (reason ? crossAccount(reason, query) : query);
  const writeOptions = options.timestamps === false ? { timestamps: false } : {};
  return {
    async find(filter, { sort, limit, projection }, reason) {
      let query = across(model.find(filter as never, projection ?? null), reason);
      if (sort) query = query.sort(sort);
      if (limit !== undefined) query = query.limit(limit);
      return (await query.lean().exec()) as T[];
    },
    async claimOne(filter, update, sort, reason) {
      const query = model.findOneAndUpdate(filter as never, update as never, { ...(sort ? { sort } : {}), returnDocument: "after", ...writeOptions });
      return (await across(query, reason).lean().exec()) as T | null;
    },
    async update(filter, update, reason) {
      return (await across(model.updateMany(filter as never, update as never, writeOptions), reason).exec()).matchedCount;
    },
    async updateEach(updates) {
      // The tenancy guard checks each filter; a held item's key names its account.
      const ops = updates.map(({ filter, update }) => ({ updateOne: { filter: filter as never, update: update as never, ...writeOptions } }));
      return (await model.bulkWrite(ops, { ordered: false, ...writeOptions })).matchedCount;
    },
    async remove(filter) {
      return (await model.deleteMany(filter as never).exec()).deletedCount;
    },
  };
}

/** A store over a raw collection (the event queue: no model, no tenant field at its top level). */
export function collectionStore<T extends Document>(collection: Collection<T>): QueueStore<T> {
  return {
    async find(filter, { sort, limit, projection }) {
      let cursor = collection.find(filter as never, projection ? { projection } : {});
      if (sort) cursor = cursor.sort(sort);
      if (limit !== undefined) cursor = cursor.limit(limit);
      return (await cursor.toArray()) as unknown as T[];
    },
    async claimOne(filter, update, sort) {
      return (await collection.findOneAndUpdate(filter as never, update as never, { ...(sort ? { sort } : {}), returnDocument: "after" })) as unknown as T | null;
    },
    async update(filter, update) {
      return (await collection.updateMany(filter as never, update as never)).matchedCount;
    },
    async updateEach(updates) {
      return (await collection.bulkWrite(updates.map(({ filter, update }) => ({ updateOne: { filter: filter as never, update: update as never } })), { ordered: false })).matchedCount;
    },
    async remove(filter) {
      return (await collection.deleteMany(filter as never)).deletedCount;
    },
  };
}

/** How a LeaseQueue's items record their lease and state; each queue keeps its own field names and values. */
export interface LeaseQueueOptions {
  /** The fields holding who holds an item's lease (null: nobody) and until when. */
  owner: string;
  until: string;
  /** `until` of an item nobody holds: null, or a past date (the epoch) so that `until < now` means free. */
  vacant: Date | null;
  /**
   * The field holding when an item is next due (a delivery's next_attempt_at). Without it `until` is the due
   * time too: an item released with a retry time keeps that time as `until` and is claimable after it.
   */
  due?: string;
  /** Items that may be claimed at `now`; default: lease ended (`until < now`) and, with `due`, due. */
  claimable?(now: Date): Filter;
  /** What a held item matches besides its owner (its status); a write that finds it otherwise does nothing. */
  held?: Filter;
  /** What a claim writes besides the lease (status running, one more attempt). */
  onClaim?: QueueUpdate;
  /** What a release writes besides vacating the lease (status pending again). */
  onRelease?: Filter;
  /** Why claims span every account (the tenancy guard's escape hatch); omit when claims pin the account. */
  crossAccount?: string;
  /**
   * Only claims ever change a free item (the event queue): a batch claim that took every candidate returns them
   * as read, with the lease, instead of reading them again.
   */
  changedOnlyByClaims?: boolean;
}

/** A claim's scope: which items (besides being claimable) and in what order. */
export interface ClaimOptions {
  filter?: Filter;
  sort?: Sort;
  now?: Date;
}

/** An item's key: its _id, plus its account_id for tenant data. Several items: `_id: {$in: ids}`. */
export type ItemKey = Filter & { _id: unknown };

/** How a release leaves an item: `set` written too, claimable again at once or from `retryAt` (a backoff). */
interface Release {
  retryAt?: Date;
  set?: Filter;
}

/** How a holder ends an item: released, or completed with `set` written (its final status). */
export type ItemEnding = { release: Release } | { complete: { set: Filter } };

/** How often a batch claim looks for candidates when other claimers keep taking all it found. */
const LOOKS_PER_BATCH_CLAIM = 3;

/** A queue of items held one holder at a time under a lease: claim, renew, write, release, complete. */
export class LeaseQueue<T> {
  constructor(
    readonly store: QueueStore<T>,
    readonly options: LeaseQueueOptions,
  ) {}

  /** The filter of items claimable at `now`. */
  claimable(now: Date): Filter {
    const { claimable, until, due } = this.options;
    if (claimable) return claimable(now);
    return { ...(due ? { [due]: { $lte: now } } : {}), [until]: { $lt: now } };
  }

  /** The filter of `key`'s items while `owner` holds them. */
  heldBy(key: ItemKey, owner: string): Filter {
    return { ...key, [this.options.owner]: owner, ...this.options.held };
  }

  /** Claims the first claimable item (by `sort`) for `owner` until now + leaseMs, in one atomic update. */
  claim(owner: string, leaseMs: number, { filter = {}, sort, now = new Date() }: ClaimOptions = {}): Promise<T | null> {
    const { onClaim = {} } = this.options;
    const update = { ...onClaim, $set: { ...onClaim.$set, ...this.lease(owner, new Date(now.getTime() + leaseMs)) } };
    return this.store.claimOne({ ...filter, ...this.claimable(now) }, update, sort, this.options.crossAccount);
  }

  /**
   * Claims up to `limit` claimable items (the first by `sort`) for `owner`: picks candidates, claims those still
   * claimable in one conditional update, and returns the ones this owner got (a concurrent claimer may win some),
   * in `sort` order. A claimer that lost every candidate looks again at once (LOOKS_PER_BATCH_CLAIM in all): the
   * items after them are free, and an empty answer sent two replicas draining one backlog to sleep by turns.
   */
  async claimBatch(owner: string, leaseMs: number, limit: number, { filter = {}, sort, now = new Date() }: ClaimOptions = {}): Promise<T[]> {
    const claimable = { ...filter, ...this.claimable(now) };
    const reason = this.options.crossAccount;
    const { onClaim = {}, changedOnlyByClaims } = this.options;
    const projection = changedOnlyByClaims ? undefined : { _id: 1 as const };
    const lease = this.lease(owner, new Date(now.getTime() + leaseMs));
    for (let look = 0; look < LOOKS_PER_BATCH_CLAIM; look++) {
      const candidates = (await this.store.find(claimable, { sort, limit, projection }, reason)) as (T & { _id: unknown })[];
      if (!candidates.length) return [];
      const ids = candidates.map((c) => c._id);
      const taken = await this.store.update({ ...claimable, _id: { $in: ids } }, { ...onClaim, $set: { ...onClaim.$set, ...lease } }, reason);
      if (!taken) continue; // another claimer took them all between the find and the update
      if (changedOnlyByClaims && taken === candidates.length) return candidates.map((c) => ({ ...c, ...lease }));
      return this.store.find({ _id: { $in: ids }, [this.options.owner]: owner, [this.options.until]: { $gt: now } }, { sort }, reason);
    }
    return [];
  }

  /** Extends the lease while `owner` still holds it; false means it was lost (taken over, or the item ended). */
  async renew(key: ItemKey, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.store.update(this.heldBy(key, owner), { $set: { [this.options.until]: new Date(Date.now() + leaseMs) } })) > 0;
  }

  /** Writes `set` (progress) only while `owner` holds the item; false when it does not. */
  async write(key: ItemKey, owner: string, set: Filter): Promise<boolean> {
    return (await this.store.update(this.heldBy(key, owner), { $set: set })) > 0;
  }

  /**
   * Gives the item back (with `set` written too): claimable again at once, or from `retryAt` (a backoff).
   * Only while `owner` holds it; false when it did not.
   */
  async release(key: ItemKey, owner: string, release: Release = {}): Promise<boolean> {
    return (await this.store.update(this.heldBy(key, owner), this.releasing(release))) > 0;
  }

  /**
   * Ends the item while `owner` holds it: `set` written (its final status) with the lease vacated, or, with
   * `remove`, deleted. False when `owner` no longer held it.
   */
  async complete(key: ItemKey, owner: string, outcome: { set: Filter } | { remove: true }): Promise<boolean> {
    if ("remove" in outcome) return (await this.store.remove(this.heldBy(key, owner))) > 0;
    return (await this.store.update(this.heldBy(key, owner), this.completing(outcome.set))) > 0;
  }

  /**
   * Releases or completes each of several items `owner` holds, each its own way, in one command; returns how many
   * it still held.
   */
  async finishEach(owner: string, items: ({ key: ItemKey } & ItemEnding)[]): Promise<number> {
    if (!items.length) return 0;
    return this.store.updateEach(
      items.map((item) => ({ filter: this.heldBy(item.key, owner), update: "release" in item ? this.releasing(item.release) : this.completing(item.complete.set) })),
    );
  }

  private releasing({ retryAt, set }: Release): QueueUpdate {
    const { due, vacant, onRelease } = this.options;
    const lease = this.lease(null, !due && retryAt ? retryAt : vacant);
    const when = due && retryAt ? { [due]: retryAt } : {};
    return { $set: { ...onRelease, ...set, ...when, ...lease } };
  }

  private completing(set: Filter): QueueUpdate {
    return { $set: { ...set, ...this.lease(null, this.options.vacant) } };
  }

  private lease(owner: string | null, until: Date | null): Filter {
    return { [this.options.owner]: owner, [this.options.until]: until };
  }
}

/** How a DueQueue's items record when they are next due. */
export interface DueQueueOptions {
  /** The field holding when the item is next due (null or absent: never). */
  due: string;
  /** Why listing due items spans every account (the tenancy guard's escape hatch). */
  crossAccount: string;
}

/** A queue of recurring items (schedules, refresh policies): list what is due, claim each occurrence once. */
export class DueQueue<T> {
  constructor(
    readonly store: QueueStore<T>,
    readonly options: DueQueueOptions,
  ) {}

  /** Items due at `now` that match `filter`, most overdue first (ties by _id), at most `limit`. */
  list(now: Date, limit: number, { filter = {}, projection }: { filter?: Filter; projection?: Record<string, 1> } = {}): Promise<T[]> {
    const { due } = this.options;
    return this.store.find({ ...filter, [due]: { $lte: now } }, { sort: { [due]: 1, _id: 1 }, limit, projection }, this.options.crossAccount);
  }

  /**
   * Claims the occurrence due at `seen` (the due time the replica read) with one atomic update that matches only
   * while the item still has it (and matches `match`: unchanged since read), moving it to `next` (with `update`
   * written too). Of several replicas exactly one gets the item back; the others get null.
   */
  claim(key: ItemKey, seen: Date | null, next: Date | null, { match = {}, update = {} }: { match?: Filter; update?: QueueUpdate } = {}): Promise<T | null> {
    const { due } = this.options;
    return this.store.claimOne({ ...key, ...match, [due]: seen }, { ...update, $set: { ...update.$set, [due]: next } }, undefined);
  }
}
