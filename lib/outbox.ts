import type { Model } from "mongoose";
import { crossAccount } from "./tenancy-guard";

/** An event waiting to be relayed into the event log (lib/events.ts), stored inside the record it belongs to. */
export interface OutboxEntry {
  event: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

type Emit = (event: string, payload: Record<string, unknown>, createdAt: Date) => unknown;
type WithOutbox = { _id: number; outbox: OutboxEntry[] };

/**
 * Publishes the events saved inside a record (written in the same single-document insert or update as the
 * change itself, so an event exists exactly when the change does), then removes what was published.
 * At-least-once: a crash between emit and pull republishes on the next sweep, never loses an event (the
 * users service relays into the event log under a deterministic id, so a republish adds nothing).
 */
export async function publishOutbox<T extends WithOutbox>(model: Model<T>, id: number, emit: Emit): Promise<number> {
  const doc = await crossAccount("the outbox relay of one record, by id", model.findById(id, { outbox: 1 })).lean<WithOutbox>();
  const entries = doc?.outbox ?? [];
  if (!entries.length) return 0;
  for (const entry of entries) await emit(entry.event, entry.payload, entry.created_at);
  // Remove exactly the entries published (by value), so entries added meanwhile stay queued.
  await model.collection.updateOne({ _id: id } as never, { $pullAll: { outbox: entries } } as never);
  return entries.length;
}

/** Republishes events left behind by a process that died between saving and publishing. */
export async function sweepOutbox<T extends WithOutbox>(model: Model<T>, emit: Emit, olderThanMs: number): Promise<number> {
  const cutoff = new Date(Date.now() - olderThanMs);
  const stale = await crossAccount("outbox sweep over every account", model.find({ "outbox.created_at": { $lte: cutoff } } as never, { _id: 1 })).limit(500).lean<WithOutbox[]>();
  let published = 0;
  for (const doc of stale) published += await publishOutbox(model, doc._id, emit);
  return published;
}
