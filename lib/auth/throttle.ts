import { Schema, type Connection, type Model } from "mongoose";
import { ERRORS } from "../errors";

/** At most `max` failures per `windowSeconds`; the window starts at the first failure. */
export interface ThrottleLimit {
  max: number;
  windowSeconds: number;
}

/** One counter of failed attempts (a login email, a team, a client address). */
interface FailureCounter {
  _id: string;
  failures: number;
  window_ends: Date;
}

const counterSchema = new Schema<FailureCounter>(
  {
    _id: { type: String, required: true },
    failures: { type: Number, required: true },
    // Expired windows are pruned by the users service (the bundled server has no TTL indexes) and reset on the next failure.
    window_ends: { type: Date, required: true, index: true },
  },
  { collection: "auth_failures", versionKey: false },
);

/** The failure counters model on a given connection: one collection, so every gateway and service replica shares it. */
export function failureCounterModel(db: Connection): Model<FailureCounter> {
  return (db.models.AuthFailure as Model<FailureCounter>) ?? db.model<FailureCounter>("AuthFailure", counterSchema);
}

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

/**
 * Throttling of credential guessing (logins, team passwords, signups hitting a taken email) per identity and
 * per client address, with the state in the database so all replicas count together. A caller over a limit is
 * refused with 429 and Retry-After before its credentials are even checked.
 */
export class FailureThrottle {
  constructor(private readonly counters: Model<FailureCounter>) {}

  /** Throws 429 when any of `keys` has used up its failures in the current window. */
  async check(keys: ThrottledKey[], now = Date.now()): Promise<void> {
    const counters = await this.counters.find({ _id: { $in: keys.map((k) => k.key) } }).lean<FailureCounter[]>();
    const wait = retryAfterSeconds(counters, keys, now);
    if (wait > 0) throw ERRORS.tooManyRequests("Too many failed attempts; try again later", wait);
  }

  /** Counts one failure against every key. */
  async fail(keys: ThrottledKey[], now = Date.now()): Promise<void> {
    await Promise.all(keys.map((k) => this.failOne(k, now)));
  }

  /** Forgets the failures of `key` (a successful login clears its email's counter, not the address's). */
  async clear(key: string): Promise<void> {
    await this.counters.deleteOne({ _id: key });
  }

  /** Deletes counters whose window has ended. */
  async prune(now = Date.now()): Promise<void> {
    await this.counters.deleteMany({ window_ends: { $lte: new Date(now) } });
  }

  private async failOne({ key, limit }: ThrottledKey, now: number): Promise<void> {
    const live = await this.counters.updateOne({ _id: key, window_ends: { $gt: new Date(now) } }, { $inc: { failures: 1 } });
    if (live.matchedCount) return;
    try {
      // No live window: start one (an expired counter is reset in place, a missing one inserted).
      await this.counters.updateOne(
        { _id: key, window_ends: { $lte: new Date(now) } },
        { $set: { failures: 1, window_ends: new Date(now + limit.windowSeconds * 1000) } },
        { upsert: true },
      );
    } catch (err) {
      // Another replica started the window first: count this failure in it.
      if ((err as { code?: number }).code !== 11000) throw err;
      await this.counters.updateOne({ _id: key }, { $inc: { failures: 1 } });
    }
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
