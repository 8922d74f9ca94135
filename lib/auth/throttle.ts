import type { Model } from "mongoose";
import { ERRORS, isDuplicateKeyError } from "../errors";
import { defineModel, stored } from "../storage";

/** At most `max` failures per `windowSeconds`; the window starts at the first attempt. */
export interface ThrottleLimit {
  max: number;
  windowSeconds: number;
}

/** One counter of attempts (a login email, a team, a client address). */
const counters = defineModel(
  {
    _id: { store: stored.string({ required: true }) },
    /** Attempts reserved in this window and not refunded: failures, plus checks still in progress. */
    failures: { store: stored.int({ required: true }) },
    // Expired windows are pruned by the users service (the bundled server has no TTL indexes) and reset on the next attempt.
    window_ends: { store: stored.date({ required: true, index: true }) },
  },
  { name: "AuthFailure", plain: true, collection: "auth_failures" },
);
type FailureCounter = typeof counters.record;

/** The failure counters model on a given connection: one collection, so every gateway and service replica shares it. */
export const failureCounterModel = counters.model;

/** A counter key and the limit it is held to. */
export interface ThrottledKey {
  key: string;
  limit: ThrottleLimit;
}

/** Seconds until the latest exhausted window among `keys` ends, or 0 when none is exhausted. */
export function retryAfterSeconds(counters: Pick<FailureCounter, "_id" | "failures" | "window_ends">[], keys: ThrottledKey[], now: number): number {
  let wait = 0;
  for (const { key, limit } of keys) {
    const counter = counters.find((c) => c._id === key);
    if (counter && counter.window_ends.getTime() > now && counter.failures >= limit.max) {
      wait = Math.max(wait, Math.ceil((counter.window_ends.getTime() - now) / 1000));
    }
  }
  return wait;
}

/** One attempt counted in advance on each of its keys: kept when it fails, given back when it succeeds. */
export interface Reservation {
  /** The attempt succeeded: its places go back to every key (the counts stay as they were before it). */
  refund(): Promise<void>;
}

/** A place taken in one counter's window (the window is named by its end, so a refund never lands in a later one). */
interface Place {
  key: string;
  windowEnds: Date;
}

/** How often a reservation retries when another replica starts the same window at the same moment. */
const RESERVE_RACE_RETRIES = 3;

/**
 * Throttling of credential guessing (logins, password changes, team passwords, an account adding a taken email)
 * per identity and per client address, with the state in the database so all replicas count together. Every
 * attempt takes its place in each counter with one atomic conditional update before its credentials are checked
 * (count first, refund on success), so concurrent attempts can never check more credentials than the limit; a
 * caller over a limit is refused with 429 and Retry-After without any check.
 */
export class FailureThrottle {
  constructor(private readonly counters: Model<FailureCounter>) {}

  /** Throws 429 when any of `keys` has used up its attempts in the current window (reads only: counts nothing). */
  async check(keys: ThrottledKey[], now = Date.now()): Promise<void> {
    const counters = await this.counters.find({ _id: { $in: keys.map((k) => k.key) } }).lean<FailureCounter[]>();
    const wait = retryAfterSeconds(counters, keys, now);
    if (wait > 0) throw ERRORS.tooManyRequests("Too many failed attempts; try again later", wait);
  }

  /**
   * Counts one attempt against every key, or throws 429 (counting nothing) when any key is at its limit. The
   * caller checks the credentials only after this, and refunds the reservation when they were right.
   */
  async reserve(keys: ThrottledKey[], now = Date.now()): Promise<Reservation> {
    const places: Place[] = [];
    for (const key of keys) {
      const taken = await this.takePlace(key, now);
      if (taken instanceof Date) {
        places.push({ key: key.key, windowEnds: taken });
        continue;
      }
      await this.giveBack(places);
      throw ERRORS.tooManyRequests("Too many failed attempts; try again later", taken.retryAfter);
    }
    return { refund: () => this.giveBack(places) };
  }

  /**
   * Runs one credential check as an attempt against `keys`: reserved before `check` runs (429 without running it
   * when over a limit), kept when it answers false, given back when it answers true or cannot run at all.
   */
  async attempt(keys: ThrottledKey[], check: () => Promise<boolean>): Promise<boolean> {
    const reservation = await this.reserve(keys);
    let right: boolean;
    try {
      right = await check();
    } catch (err) {
      await reservation.refund();
      throw err;
    }
    if (right) await reservation.refund();
    return right;
  }

  /** Forgets the attempts of `key` (a successful login clears its email's counter, not the address's). */
  async clear(key: string): Promise<void> {
    await this.counters.deleteOne({ _id: key });
  }

  /** Deletes counters whose window has ended. */
  async prune(now = Date.now()): Promise<void> {
    await this.counters.deleteMany({ window_ends: { $lte: new Date(now) } });
  }

  /** Takes one place in `key`'s live window (or starts a window): the window's end, or how long until one frees. */
  private async takePlace({ key, limit }: ThrottledKey, now: number): Promise<Date | { retryAfter: number }> {
    const at = new Date(now);
    for (let attempt = 0; attempt < RESERVE_RACE_RETRIES; attempt++) {
      // One conditional update: concurrent attempts are serialised by the database, and none passes a full window.
      const live = await this.counters
        .findOneAndUpdate({ _id: key, window_ends: { $gt: at }, failures: { $lt: limit.max } }, { $inc: { failures: 1 } }, { returnDocument: "after" })
        .lean<FailureCounter>();
      if (live) return live.window_ends;
      const windowEnds = new Date(now + limit.windowSeconds * 1000);
      try {
        // No place in a live window: start one if none is live (an expired counter is reset, a missing one inserted).
        const started = await this.counters.updateOne({ _id: key, window_ends: { $lte: at } }, { $set: { failures: 1, window_ends: windowEnds } }, { upsert: true });
        if (started.matchedCount || started.upsertedCount) return windowEnds;
      } catch (err) {
        // A live window exists (the insert met its _id): full, or started by another replica a moment ago.
        if (!isDuplicateKeyError(err)) throw err;
      }
      const counter = await this.counters.findById(key).lean<FailureCounter>();
      const wait = counter ? retryAfterSeconds([counter], [{ key, limit }], now) : 0;
      if (wait > 0) return { retryAfter: wait };
    }
    return { retryAfter: 1 };
  }

  /** Gives back places taken by a reservation (only in the windows they were taken in). */
  private async giveBack(places: Place[]): Promise<void> {
    await Promise.all(
      places.map((p) => this.counters.updateOne({ _id: p.key, window_ends: p.windowEnds, failures: { $gt: 0 } }, { $inc: { failures: -1 } })),
    );
  }
}

/** The counters one attempt is held to: its identity (e.g. "login:a@b.c", "team:7"), if any, and its client address. */
export function attemptKeys(
  limits: { identity: ThrottleLimit; client: ThrottleLimit },
  identity: string | null,
  clientIp: string | undefined,
): ThrottledKey[] {
  return [
    ...(identity ? [{ key: identity, limit: limits.identity }] : []),
    { key: `client:${clientIp ?? "unknown"}`, limit: limits.client },
  ];
}
