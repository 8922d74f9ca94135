import { createHash, randomBytes } from "node:crypto";
import type { Connection } from "mongoose";
import { isDuplicateKeyError } from "./errors";
import { CONSUMER_GROUPS } from "./event-types";
import { nextId } from "./ids";

/**
 * The durable event log: one collection, `events`, that every service writes its change events to and every
 * consumer group reads from with its own per-event acknowledgement (docs/decisions.md, "Durable events").
 */
export const EVENTS_COLLECTION = "events";

/**
 * The one shape of every event, stored and handed to consumers alike. `data` is the record as the REST API
 * returns it (for deletes `{id}`); `subject` names the record ("agents/12"), which orders events per record.
 */
export interface ChangeEvent {
  id: string;
  type: string;
  account_id: number;
  subject: string;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/** What a writer knows before its write: the event's type, account and record. */
export interface ChangeDraft {
  type: string;
  accountId: number;
  /** The record's collection and id, e.g. ["agents", 12]. */
  record: [collection: string, id: number];
}

/** A stored event: the ChangeEvent plus its place in the log and who still has to handle it. */
export interface StoredEvent extends Omit<ChangeEvent, "id"> {
  _id: string;
  /** prepared: written before the change, invisible to consumers; committed: the change happened. */
  state: "prepared" | "committed";
  /** Commit order (one counter), which is the order consumers see per record. */
  seq: number | null;
  committed_at: Date | null;
  /** Consumer groups that have not acknowledged the event yet. */
  pending: string[];
  /** Per group: until when a consumer holds the event. */
  claims: Record<string, Date>;
  claimed_by: Record<string, string>;
}

/** The groups an event of this type is pending for when committed. */
export function groupsFor(type: string): string[] {
  return Object.entries(CONSUMER_GROUPS).flatMap(([group, handles]) => (handles(type) ? [group] : []));
}

export function newEventId(): string {
  return `evt_${randomBytes(18).toString("base64url")}`;
}

/** A deterministic event id, for events that happen once per record (user.registered): replays insert nothing. */
export function eventIdFor(type: string, subject: string): string {
  return `evt_${createHash("sha256").update(`${type}\n${subject}`).digest("base64url").slice(0, 24)}`;
}

/** The draft of a change to a record of `collection`, e.g. changeOf("agent.updated", "agents", agent). */
export function changeOf(type: string, collection: string, record: { _id: number; account_id: number }): ChangeDraft {
  return { type, accountId: record.account_id, record: [collection, record._id] };
}

const subjectOf = ([collection, id]: ChangeDraft["record"]) => `${collection}/${id}`;

function log(db: Connection) {
  return db.collection<StoredEvent>(EVENTS_COLLECTION);
}

/** Indexes the log's readers rely on; every service that writes or reads events ensures them at start. */
export async function ensureEventIndexes(db: Connection): Promise<void> {
  // One createIndex at a time: the local server drops the connection on a multi-index createIndexes of existing indexes.
  const keys: Record<string, 1>[] = [{ pending: 1, seq: 1 }, { subject: 1, seq: 1 }, { state: 1, occurred_at: 1 }, { committed_at: 1 }];
  for (const key of keys) {
    await log(db).createIndex(key);
  }
}

/** Writes events as prepared, before the change they describe. Returns their ids, in order. */
export async function prepareEvents(db: Connection, drafts: ChangeDraft[], now = new Date()): Promise<string[]> {
  if (!drafts.length) return [];
  const docs = drafts.map((d) => ({
    _id: newEventId(),
    type: d.type,
    account_id: d.accountId,
    subject: subjectOf(d.record),
    data: {},
    occurred_at: now,
    state: "prepared" as const,
    seq: null,
    committed_at: null,
    pending: [],
    claims: {},
    claimed_by: {},
  }));
  await log(db).insertMany(docs);
  return docs.map((d) => d._id);
}

/**
 * Makes prepared events visible to consumers with their data, in the order given (one counter range). An event
 * that is no longer prepared (another replica resolved it) is left as it is.
 */
export async function commitEvents(db: Connection, committed: { id: string; type: string; data: Record<string, unknown> }[]): Promise<number> {
  if (!committed.length) return 0;
  const last = await nextId(db, EVENTS_COLLECTION, committed.length);
  const now = new Date();
  const res = await log(db).bulkWrite(
    committed.map((c, i) => {
      const pending = groupsFor(c.type);
      const claims = Object.fromEntries(pending.map((g) => [g, new Date(0)]));
      return {
        updateOne: {
          filter: { _id: c.id, state: "prepared" },
          update: { $set: { state: "committed", data: c.data, seq: last - committed.length + 1 + i, committed_at: now, pending, claims } },
        },
      };
    }),
    { ordered: true },
  );
  return res.modifiedCount;
}

/** Drops prepared events whose change did not happen (the write failed). */
export async function abortEvents(db: Connection, ids: string[]): Promise<void> {
  if (ids.length) await log(db).deleteMany({ _id: { $in: ids }, state: "prepared" });
}

/**
 * Writes a committed event directly, for changes recorded in the record's own write (user.registered's
 * outbox) and relayed here; a deterministic id makes a replayed relay a no-op. True when it was new.
 */
export async function appendEvent(db: Connection, event: ChangeEvent): Promise<boolean> {
  try {
    await log(db).insertOne({ ...event, _id: event.id, state: "prepared", seq: null, committed_at: null, pending: [], claims: {}, claimed_by: {} } as never);
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
    // Inserted before (a replay): commit it in case the first relay died between insert and commit.
  }
  return (await commitEvents(db, [{ id: event.id, type: event.type, data: event.data }])) === 1;
}

/** The ChangeEvent a consumer gets from a stored one. */
export function toChangeEvent(stored: StoredEvent): ChangeEvent {
  const { _id, type, account_id, subject, data, occurred_at } = stored;
  return { id: _id, type, account_id, subject, data, occurred_at };
}

/**
 * Prepared events older than `olderThanMs` whose record lives in one of `collections`: left by a process that
 * died between its write and the commit. The caller decides each with resolvePrepared.
 */
export function abandonedEvents(db: Connection, collections: string[], olderThanMs: number, limit = 100): Promise<StoredEvent[]> {
  return log(db)
    .find({ state: "prepared", occurred_at: { $lt: new Date(Date.now() - olderThanMs) }, subject: { $regex: `^(${collections.join("|")})/` } })
    .sort({ occurred_at: 1 })
    .limit(limit)
    .toArray() as Promise<StoredEvent[]>;
}

/**
 * Settles an abandoned event by what the database shows: a delete is committed when the record is gone, a
 * create or update when the record exists (with `render`ed current state as data); otherwise the change never
 * happened and the event is dropped.
 */
export async function resolvePrepared(db: Connection, event: StoredEvent, render: (record: Record<string, unknown>) => Promise<Record<string, unknown>>): Promise<"committed" | "dropped"> {
  const [collection, id] = event.subject.split("/") as [string, string];
  const record = await db.collection(collection).findOne({ _id: Number(id) } as never);
  const deleted = event.type.endsWith(".deleted");
  if (deleted ? record === null : record !== null) {
    await commitEvents(db, [{ id: event._id, type: event.type, data: deleted ? { id: Number(id) } : await render(record!) }]);
    return "committed";
  }
  await abortEvents(db, [event._id]);
  return "dropped";
}

/**
 * Claims up to `limit` of a group's oldest unhandled events for `owner` until now + leaseMs, then holds back
 * every event whose record has an older event this group has not acknowledged (another replica holds it, or
 * it failed): per record, a group sees events in commit order. Returns the claimed events in that order.
 */
export async function claimEvents(db: Connection, group: string, owner: string, leaseMs: number, limit: number): Promise<StoredEvent[]> {
  const now = new Date();
  const due = { state: "committed", pending: group, [`claims.${group}`]: { $lt: now } };
  const candidates = await log(db).find(due as never, { projection: { _id: 1 } }).sort({ seq: 1 }).limit(limit).toArray();
  if (!candidates.length) return [];
  const ids = candidates.map((c) => c._id);
  await log(db).updateMany({ ...due, _id: { $in: ids } } as never, {
    $set: { [`claims.${group}`]: new Date(now.getTime() + leaseMs), [`claimed_by.${group}`]: owner },
  } as never);
  const claimed = (await log(db).find({ _id: { $in: ids }, [`claimed_by.${group}`]: owner, [`claims.${group}`]: { $gt: now } } as never).sort({ seq: 1 }).toArray()) as StoredEvent[];
  if (!claimed.length) return [];
  const older = await log(db)
    .find(
      { pending: group, subject: { $in: [...new Set(claimed.map((e) => e.subject))] }, seq: { $lt: claimed[claimed.length - 1]!.seq }, _id: { $nin: claimed.map((e) => e._id) } } as never,
      { projection: { subject: 1, seq: 1 } },
    )
    .toArray();
  const firstWaiting = new Map<string, number>();
  for (const o of older) firstWaiting.set(o.subject, Math.min(firstWaiting.get(o.subject) ?? Infinity, o.seq ?? Infinity));
  const ready = claimed.filter((e) => (e.seq ?? 0) < (firstWaiting.get(e.subject) ?? Infinity));
  const held = claimed.filter((e) => !ready.includes(e));
  await releaseEvents(db, group, held.map((e) => e._id), 0);
  return ready;
}

/** Marks events handled by a group; fully handled events stay until pruned. */
export async function acknowledgeEvents(db: Connection, group: string, ids: string[]): Promise<void> {
  if (ids.length) await log(db).updateMany({ _id: { $in: ids } }, { $pullAll: { pending: [group] } } as never);
}

/** Gives events back to a group, to be claimed again after `delayMs` (a failed handler backs off). */
export async function releaseEvents(db: Connection, group: string, ids: string[], delayMs: number): Promise<void> {
  if (ids.length) await log(db).updateMany({ _id: { $in: ids } }, { $set: { [`claims.${group}`]: new Date(Date.now() + delayMs) } } as never);
}

/**
 * Deletes committed events every group has handled, committed before `handledBefore`, and any event committed
 * before `pendingBefore` (a group absent that long loses them); prepared events are never pruned here.
 */
export async function pruneEvents(db: Connection, handledBefore: Date, pendingBefore: Date): Promise<number> {
  const res = await log(db).deleteMany({
    state: "committed",
    $or: [{ pending: { $size: 0 }, committed_at: { $lt: handledBefore } }, { committed_at: { $lt: pendingBefore } }],
  } as never);
  return res.deletedCount;
}
