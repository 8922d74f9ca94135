import { hash, randomFillSync } from "node:crypto";
import type { Connection } from "mongoose";
import { insertNew } from "./db";
import { decodeFreeJson, encodeFreeJson } from "./free-json";
import { CONSUMER_GROUPS } from "./event-types";
import { groupCommit, perBatch } from "./group-commit";
import { coverOfId, coverRecordIds, nextId, readSequences, type IdBlockCover } from "./ids";
import { collectionStore, LeaseQueue } from "./lease-queue";
import { tenantFilter } from "./tenancy-guard";

/**
 * The durable event log: every service writes its change events to `events` (prepared before the change,
 * committed after it), and each consumer group takes them from `event_queue` with its own acknowledgement
 * (docs/adr/0020-durable-events.md).
 */
export const EVENTS_COLLECTION = "events";
/**
 * Work items: one per (committed event, consumer group) until the group acknowledges it, carrying the event.
 * Consumers only ever scan this small collection, never the whole log (the local database scans what it reads).
 */
export const EVENT_QUEUE_COLLECTION = "event_queue";

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

/**
 * A stored event: the ChangeEvent plus its state and place in the log. A change has two entries: the prepared one
 * (`_id` preparedId(event id), `event_id` the event's), written before the change, and the committed one (`_id` the
 * event's id), inserted by the commit, after which the prepared one is dropped.
 */
export interface StoredEvent extends Omit<ChangeEvent, "id" | "data"> {
  _id: string;
  /** On a prepared entry, the event's id; absent on one the previous version prepared under the event's own id. */
  event_id?: string;
  /** ChangeEvent.data as stored: encoded like every free-form field (lib/free-json), since it holds client JSON. */
  data: unknown;
  /** prepared: written before the change, invisible to consumers; committed: the change happened (docs/adr/0038-events-of-cut-off-writes.md). */
  state: "prepared" | "committed";
  /** The event's place among its record's changes (eventSeqs), the order consumers see per record. */
  seq: number | null;
  committed_at: Date | null;
  /** On the entry that covers a block of record ids (coverCreates), the block; `type` is its collection's created event. */
  ids?: { first: number; last: number };
}

/** A committed event waiting for one consumer group. */
export interface QueuedEvent {
  /** `<group>:<event id>`, so an event is queued once per group. */
  _id: string;
  group: string;
  /** The event, its data encoded as in StoredEvent. */
  event: Omit<ChangeEvent, "data"> & { data: unknown };
  subject: string;
  seq: number;
  /** Until when a consumer holds it (past: free), and which one. */
  claim_until: Date;
  claimed_by: string | null;
  queued_at: Date;
}

/** The groups that handle events of this type (an event is queued for those of them that act for its account: queuedGroups). */
export function groupsFor(type: string): readonly string[] {
  let groups = groupsByType.get(type);
  if (!groups) groupsByType.set(type, (groups = Object.entries(CONSUMER_GROUPS).flatMap(([group, { handles }]) => (handles(type) ? [group] : []))));
  return groups;
}
/** groupsFor's answers: the groups are fixed, and every commit asks for each of its events. */
const groupsByType = new Map<string, readonly string[]>();

/**
 * Per connection, what commits learnt of the accounts a group acts for (CONSUMER_GROUPS' onlyForAccountsWith), by
 * "<collection>/<account>": `holding`, the accounts found holding a record of the collection, kept for good (an
 * account that deletes its last one gets the group's events again, which it then has nothing to do with, as before
 * this check); `noneAt`, when (performance.now()) the latest look that found none was sent.
 */
interface AccountsSeen {
  holding: Set<string>;
  noneAt: Map<string, number>;
}
const accountsSeen = new WeakMap<Connection, AccountsSeen>();

/**
 * The groups each committed event is queued for: those handling its type, less a group that acts only for accounts
 * holding a record of some collection when the event's account holds none. A record created before the change's
 * request arrived must be seen, so the account is looked up after that arrival: an account found holding one costs
 * nothing more; a look that found none answers for every event of the account prepared in this process before it
 * was sent (`preparedAt`, performance.now()), so under load one look serves the commits of many requests; any other
 * event's account is looked up again (docs/adr/0050-write-path-speed.md, fourth and fifth passes).
 */
async function queuedGroups(db: Connection, committed: (Pick<ChangeEvent, "type" | "account_id" | "subject"> & { preparedAt?: number })[]): Promise<string[][]> {
  let seen = accountsSeen.get(db);
  if (!seen) accountsSeen.set(db, (seen = { holding: new Set(), noneAt: new Map() }));
  const { holding, noneAt } = seen;
  const handling = committed.map(({ type }) => groupsFor(type));
  const unknown = new Map<string, { collection: string; accountId: number }>();
  committed.forEach(({ account_id, subject, preparedAt }, i) => {
    for (const group of handling[i]!) {
      const collection = CONSUMER_GROUPS[group]!.onlyForAccountsWith;
      const key = `${collection}/${account_id}`;
      if (!collection || holding.has(key)) continue;
      // A change of a record of that collection itself is looked up after its write, as before: a subscription's
      // own creation is queued for it.
      const answered = preparedAt !== undefined && !subject.startsWith(`${collection}/`) && (noneAt.get(key) ?? -Infinity) >= preparedAt;
      if (!answered) unknown.set(key, { collection, accountId: account_id });
    }
  });
  await Promise.all(
    [...unknown].map(async ([key, { collection, accountId }]) => {
      const sentAt = performance.now();
      if (await db.collection(collection).findOne(tenantFilter(collection, { account_id: accountId }) as never, { projection: { _id: 1 } })) holding.add(key);
      else noneAt.set(key, Math.max(sentAt, noneAt.get(key) ?? -Infinity));
    }),
  );
  return committed.map(({ account_id }, i) =>
    handling[i]!.filter((group) => {
      const collection = CONSUMER_GROUPS[group]!.onlyForAccountsWith;
      return !collection || holding.has(`${collection}/${account_id}`);
    }),
  );
}

/** Random bytes for event ids, drawn a few kilobytes at a time: a draw per id cost a system call per change. */
const EVENT_ID_BYTES = 18;
const eventIdEntropy = Buffer.alloc(EVENT_ID_BYTES * 512);
let eventIdOffset = eventIdEntropy.length;

export function newEventId(): string {
  if (eventIdOffset === eventIdEntropy.length) {
    randomFillSync(eventIdEntropy);
    eventIdOffset = 0;
  }
  return `evt_${eventIdEntropy.toString("base64url", eventIdOffset, (eventIdOffset += EVENT_ID_BYTES))}`;
}

/** A deterministic event id, for events that happen once per record (user.registered): replays insert nothing. */
export function eventIdFor(type: string, subject: string): string {
  return `evt_${hash("sha256", `${type}\n${subject}`, "base64url").slice(0, 24)}`;
}

/**
 * An event's id: a create happens once per record, so its event's id is derived from the record (the settling of
 * a covered block finds out from the id alone whether a record's create was committed: coverCreates); any other
 * change's is random.
 */
function eventIdOfDraft(draft: ChangeDraft): string {
  return isCreate(draft) ? eventIdFor(draft.type, subjectOf(draft.record)) : newEventId();
}

const isCreate = (draft: Pick<ChangeDraft, "type">) => draft.type.endsWith(".created");

/** The draft of a change to a record of `collection`, e.g. changeOf("agent.updated", "agents", agent). */
export function changeOf(type: string, collection: string, record: { _id: number; account_id: number }): ChangeDraft {
  return { type, accountId: record.account_id, record: [collection, record._id] };
}

export const subjectOf = ([collection, id]: ChangeDraft["record"]) => `${collection}/${id}`;

/** The _id of an event's prepared entry in the log (the committed entry's is the event's id). */
export const preparedId = (eventId: string) => `${eventId}:prepared`;
/** The event a prepared entry stands for. */
const eventIdOf = (entry: Pick<StoredEvent, "_id" | "event_id">) => entry.event_id ?? entry._id;

function log(db: Connection) {
  return db.collection<StoredEvent>(EVENTS_COLLECTION);
}

function queue(db: Connection) {
  return db.collection<QueuedEvent>(EVENT_QUEUE_COLLECTION);
}

/** The log's indexes, by collection: every query on it is served by one of them (test/integration/indexes.spec.ts). */
export const EVENT_INDEXES: Record<string, Record<string, 1>[]> = {
  [EVENTS_COLLECTION]: [{ state: 1, occurred_at: 1 }, { committed_at: 1 }],
  [EVENT_QUEUE_COLLECTION]: [{ group: 1, queued_at: 1 }, { subject: 1, seq: 1 }, { queued_at: 1 }],
};

/** Creates EVENT_INDEXES; every service that writes or reads events ensures them at start. */
export async function ensureEventIndexes(db: Connection): Promise<void> {
  // One createIndex at a time: the local server drops the connection on a multi-index createIndexes of existing indexes.
  for (const [collection, indexes] of Object.entries(EVENT_INDEXES)) {
    for (const key of indexes) await db.collection(collection).createIndex(key);
  }
}

/**
 * Writes events as prepared, before the change they describe. Returns their ids, in order. Concurrent calls on
 * one connection go in one insert (group commit, docs/adr/0050-write-path-speed.md).
 */
export async function prepareEvents(db: Connection, drafts: ChangeDraft[], now = new Date()): Promise<string[]> {
  if (!drafts.length) return [];
  const ids = drafts.map(eventIdOfDraft);
  const docs = drafts.map((d, i) => ({
    _id: preparedId(ids[i]!),
    event_id: ids[i]!,
    type: d.type,
    account_id: d.accountId,
    subject: subjectOf(d.record),
    data: {},
    occurred_at: now,
    state: "prepared" as const,
    seq: null,
    committed_at: null,
  }));
  await grouped(db).insertEntries(docs); // random ids, or a new record's: none exists
  return ids;
}

/**
 * An event to commit; `preparedAt` (performance.now()) when this process prepared it, if it did (queuedGroups);
 * `cover` when it is a create covered by its id's block instead of a prepared entry (coverCreates).
 */
type Committed = Omit<ChangeEvent, "occurred_at"> & { preparedAt?: number; cover?: CreateCover };

/**
 * How long the committed entries of answered changes wait to be logged, gathering the others committed meanwhile
 * into one insert and one drop of their prepared entries (at one writer, an insert and a delete per change cost as
 * much as the change itself), and how many make a flush at once.
 */
const LOG_GATHER_MS = 100;
const LOG_BATCH = 256;

/** Per connection, the group commits of prepares and commits, and the gathered logging of committed events. */
interface Grouped {
  /** Inserts log entries, prepared and committed alike, with those of other callers; answers the positions that existed. */
  insertEntries(entries: StoredEvent[]): Promise<number[]>;
  commit(events: Committed[]): Promise<string[]>;
  /** Deletes a prepared entry with the next gathered flush (a retired block cover's). */
  dropLater(entryId: string): void;
  /** Logs the committed entries gathered so far and waits for every flush on its way, and those they lead to (flushCommits). */
  flushLog(): Promise<void>;
}
const groups = new WeakMap<Connection, Grouped>();
function grouped(db: Connection): Grouped {
  let group = groups.get(db);
  if (!group) {
    const logging = new Set<Promise<void>>();
    let gathered: StoredEvent[] = [];
    /** The covers of gathered covered creates (one per such create), and the prepared entries to drop once logged. */
    let covered: CreateCover[] = [];
    let drops: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    // One stage for both kinds of entry: under load, prepares and gathered commits that wait together go in one command.
    const insertEntries = groupCommit(async (batches: StoredEvent[][]) => {
      const entries = batches.flat();
      const existing = new Set(await insertNew(log(db), entries));
      return perBatch(batches, entries.map((_, i) => existing.has(i))).map((flags) => flags.flatMap((found, i) => (found ? [i] : [])));
    });
    const sendGathered = () => {
      clearTimeout(timer);
      timer = undefined;
      const [entries, ending, dropping] = [gathered, covered, drops];
      [gathered, covered, drops] = [[], [], []];
      // A flush that fails leaves its events prepared or covered, queued already: the settling logs them.
      const logged = logCommitted(db, entries, insertEntries)
        .then(async () => {
          // Prepared entries are named by id alone: a lookup per id (a condition on `state` made the local server read
          // every prepared entry). A previous version's entry, under the event's own id, was turned committed in place.
          if (dropping.length) await log(db).deleteMany({ _id: { $in: dropping } });
          for (const cover of ending) cover.end();
        })
        .catch(() => undefined);
      logging.add(logged);
      void logged.finally(() => logging.delete(logged));
    };
    const sendSoon = () => {
      if (gathered.length >= LOG_BATCH) sendGathered();
      else if (!timer) (timer = setTimeout(sendGathered, LOG_GATHER_MS)).unref();
    };
    groups.set(
      db,
      (group = {
        insertEntries,
        commit: groupCommit(async (batches: Committed[][]) => {
          const events = batches.flat();
          const { groups, entries } = await queueCommitted(db, events);
          // The writers answer now; their committed entries are logged a little later, gathered.
          gathered.push(...entries);
          events.forEach(({ cover, id }) => (cover ? covered.push(cover) : drops.push(preparedId(id))));
          sendSoon();
          return perBatch(batches, groups).map((eventGroups) => [...new Set(eventGroups.flat())]);
        }),
        dropLater(entryId) {
          drops.push(entryId);
          sendSoon();
        },
        async flushLog() {
          // Until nothing is left: a flush that logs a retired cover's last create drops the cover in the next one.
          while (gathered.length || drops.length || logging.size) {
            if (gathered.length || drops.length) sendGathered();
            await Promise.all([...logging]);
          }
        },
      }),
    );
  }
  return group;
}

/** Logs and waits for the committed entries this process has gathered (a stopping service lets them land). */
export async function flushCommits(db: Connection): Promise<void> {
  await groups.get(db)?.flushLog();
}

/** Deletes the prepared entries of events (the previous version's too, kept under the event's own id). */
async function dropPrepared(db: Connection, eventIds: string[]): Promise<void> {
  if (eventIds.length) await log(db).deleteMany({ _id: { $in: [...eventIds.map(preparedId), ...eventIds] }, state: "prepared" });
}

/**
 * A block of record ids covered in the log, so that its creates need no prepared entry each (under load a prepared
 * entry and its drop were two fifths of a create's cost to the local server; docs/adr/0050-write-path-speed.md,
 * seventh pass). The cover is a prepared entry (`ids`, `type` the collection's created event) written before the
 * block's first id goes out. A create with an id of a fresh cover commits its event, whose id is derived from the
 * record, without a prepared entry; should its process die first, the settling of the cover, once abandoned,
 * commits the created event of every record of the block that has none in the log (settleIdBlock). Ids go out
 * under a cover only while it is younger than a sixth of the abandonment age (then the rest of the block is covered
 * anew), so every covered create has five sixths of that age to commit, as a prepared one has all of it. The cover
 * is dropped once retired and its creates are logged.
 */
class CreateCover implements IdBlockCover {
  private pending = 0;
  private retired = false;

  constructor(
    private readonly db: Connection,
    private readonly entryId: string,
    readonly first: number,
    readonly last: number,
    /** performance.now() before the entry was written, and how long after that it hands ids out. */
    private readonly coveredAt: number,
    private readonly freshMs: number,
  ) {}

  fresh(): boolean {
    return !this.retired && performance.now() - this.coveredAt < this.freshMs;
  }

  /** A create of one of the block's ids goes without a prepared entry; false when the cover can take no more. */
  begin(): boolean {
    if (!this.fresh()) return false;
    this.pending++;
    return true;
  }

  /** A covered create is logged, or settled after its write failed. */
  end(): void {
    this.pending--;
    this.dropWhenDone();
  }

  retire(): void {
    this.retired = true;
    this.dropWhenDone();
  }

  private dropWhenDone(): void {
    if (this.retired && this.pending === 0) grouped(this.db).dropLater(this.entryId);
  }
}

/**
 * Covers the creates of `collection`, whose events are of type `created`: from this process's next block of its
 * record ids on, each block gets a CreateCover (the first call per collection and connection sets it).
 */
function coverCreates(db: Connection, collection: string, created: string, abandonedAfterMs: number): void {
  coverRecordIds(db, collection, async (first, last) => {
    const entryId = `${newEventId()}:ids`;
    const coveredAt = performance.now();
    await grouped(db).insertEntries([
      { _id: entryId, type: created, account_id: 0, subject: `${collection}/ids`, data: {}, occurred_at: new Date(), state: "prepared", seq: null, committed_at: null, ids: { first, last } },
    ]);
    return new CreateCover(db, entryId, first, last, coveredAt, abandonedAfterMs / 6);
  });
}
/** The cover a change was begun under (its writer ends it), as recordChanges carries it. */
export type { CreateCover };

/**
 * Starts changes: each create whose record id went out under a fresh cover is covered by it, every other change is
 * prepared (prepareEvents). Returns the events' ids and the covers, in order. `renders` names the collections whose
 * creates may be covered: the settling of a cover renders their records.
 */
export async function beginChanges(
  db: Connection,
  drafts: ChangeDraft[],
  { abandonedAfterMs, renders }: { abandonedAfterMs: number; renders: (collection: string) => boolean },
): Promise<{ ids: string[]; covers: (CreateCover | undefined)[] }> {
  const covers = drafts.map((draft) => {
    const [collection, id] = draft.record;
    if (!isCreate(draft) || !renders(collection)) return undefined;
    coverCreates(db, collection, draft.type, abandonedAfterMs);
    const cover = coverOfId(db, collection, id);
    return cover instanceof CreateCover && cover.begin() ? cover : undefined;
  });
  const uncovered = drafts.filter((_, i) => !covers[i]);
  const prepared = (
    await prepareEvents(db, uncovered).catch((err) => {
      for (const cover of covers) cover?.end(); // nothing was written
      throw err;
    })
  ).values();
  return { ids: drafts.map((draft, i) => (covers[i] ? eventIdOfDraft(draft) : prepared.next().value!)), covers };
}

/**
 * Makes prepared events visible to consumers with their data, in the order given. The steps are ordered so that a
 * process killed between any two of them leaves a state the settling of abandoned events repairs
 * (docs/adr/0038-events-of-cut-off-writes.md): the change counts first (which give the events their seqs), then
 * one work item per consumer group (deterministic ids: a second commit of the event queues nothing new), then the
 * committed entry, and last the prepared entry is dropped. An event is never committed without its work items, and
 * an event whose prepared entry stays is settled by what the database shows. Returns how many of the events this
 * call committed (others were committed meanwhile).
 */
export async function commitEvents(db: Connection, committed: Committed[]): Promise<number> {
  const { entries } = await queueCommitted(db, committed);
  const committedHere = await logCommitted(db, entries, (batch) => insertNew(log(db), batch));
  await dropPrepared(db, committed.map((event) => event.id));
  return committedHere;
}

/**
 * commitEvents for a writer about to answer: concurrent calls on one connection are counted and queued together
 * (one update of each change counter, one insert of work items), and their committed entries logged and prepared
 * entries dropped together after the answer (docs/adr/0050-write-path-speed.md, fourth and sixth passes): once an
 * event's work items are queued, its consumers have it, and a process killed before the logging leaves the event
 * prepared for the settling, as a kill before the answer did. Returns the groups work was queued for.
 */
export async function commitEventsGrouped(db: Connection, committed: Committed[]): Promise<string[]> {
  return committed.length ? grouped(db).commit(committed) : [];
}

/**
 * The first steps of a commit: the events' seqs from the change counts, and their work items queued for the groups
 * each is for. Returns those groups and the committed entries to log.
 */
async function queueCommitted(db: Connection, committed: Committed[]): Promise<{ groups: string[][]; entries: StoredEvent[] }> {
  if (!committed.length) return { groups: [], entries: [] };
  const [seqs, groups] = await Promise.all([eventSeqs(db, committed), queuedGroups(db, committed)]);
  const now = new Date();
  // data holds client JSON (any keys): stored encoded like every free-form field (lib/free-json), once per event.
  const data = committed.map((event) => encodeFreeJson(event.data));
  const items = committed.flatMap((event, i) =>
    groups[i]!.map((group) => ({
      _id: `${group}:${event.id}`,
      group,
      event: { id: event.id, type: event.type, account_id: event.account_id, subject: event.subject, data: data[i], occurred_at: now },
      subject: event.subject,
      seq: seqs[i]!,
      claim_until: new Date(0),
      claimed_by: null,
      queued_at: now,
    })),
  );
  await insertNew(queue(db), items); // items queued by an earlier commit of the event stay as they are
  const entries = committed.map((c, i) => ({
    _id: c.id,
    type: c.type,
    account_id: c.account_id,
    subject: c.subject,
    data: data[i],
    occurred_at: now,
    state: "committed" as const,
    seq: seqs[i]!,
    committed_at: now,
  }));
  return { groups, entries };
}

/**
 * The committed entries' step of a commit: each is inserted, not written over its prepared entry (FerretDB rewrites
 * an updated document and its indexes in a transaction of its own, the dearest write a commit made). Returns how
 * many of the entries this call committed; an entry by that id is the event committed already, or one the previous
 * version prepared under the event's own id, which turns committed in place.
 */
async function logCommitted(db: Connection, entries: StoredEvent[], insertEntries: (entries: StoredEvent[]) => Promise<number[]>): Promise<number> {
  if (!entries.length) return 0;
  const existing = await insertEntries(entries);
  const turned = await Promise.all(
    existing.map(async (i) => {
      const { _id, ...entry } = entries[i]!;
      return (await log(db).updateOne({ _id, state: "prepared" }, { $set: entry })).modifiedCount;
    }),
  );
  return entries.length - existing.length + turned.reduce((sum, n) => sum + n, 0);
}

const changeSequence = (collection: string, accountId: number) => `changes/${collection}/${accountId}`;

/**
 * Seqs start above every seq the log's former single counter handed out, so per record an event queued by a replica
 * of the previous version still comes first during an upgrade.
 */
const SEQ_BASE = 2 ** 40;

/**
 * Counts the changes `committed` made (after their writes, before their writers answer) and gives each event its
 * seq from its count: the change counter of its record's collection in its account, one update per counter for all
 * of a commit's events. A change made after another's answer is counted after it, so per record, the order that
 * consumers keep, seqs ascend in the order the changes were made (docs/adr/0050-write-path-speed.md, fourth pass).
 */
async function eventSeqs(db: Connection, committed: Pick<ChangeEvent, "account_id" | "subject">[]): Promise<number[]> {
  const byCounter = new Map<string, number[]>();
  committed.forEach(({ subject, account_id }, i) => {
    const sequence = changeSequence(subject.slice(0, subject.indexOf("/")), account_id);
    const indexes = byCounter.get(sequence);
    if (indexes) indexes.push(i);
    else byCounter.set(sequence, [i]);
  });
  const seqs = new Array<number>(committed.length);
  await Promise.all(
    [...byCounter].map(async ([sequence, indexes]) => {
      const first = (await nextId(db, sequence, indexes.length)) - indexes.length + 1;
      indexes.forEach((index, j) => (seqs[index] = SEQ_BASE + first + j));
    }),
  );
  return seqs;
}

/**
 * How many changes of an account's records in each collection have been committed (0 before the first),
 * read in one query. Each is counted after its write and before its writer answers, so a read made after seeing
 * count N includes every change counted up to N: a cache of such reads, keyed by the count, answers what the
 * database would.
 */
export async function changeCounts<const C extends readonly string[]>(db: Connection, accountId: number, collections: C): Promise<{ [K in keyof C]: number }> {
  return (await readSequences(db, collections.map((collection) => changeSequence(collection, accountId)))) as { [K in keyof C]: number };
}

/** Drops prepared events whose change did not happen (the write failed). */
export async function abortEvents(db: Connection, ids: string[]): Promise<void> {
  await dropPrepared(db, ids);
}

/**
 * Writes a committed event directly, for changes recorded in the record's own write (user.registered's
 * outbox) and relayed here; a deterministic id makes a replayed relay a no-op. True when it was new.
 */
export async function appendEvent(db: Connection, event: ChangeEvent): Promise<boolean> {
  // No prepared entry: the record's outbox keeps the event until this returns, and a replay commits nothing twice.
  return (await commitEvents(db, [event])) === 1;
}

/** The ChangeEvent a consumer gets from a queued one. */
export function queuedEvent(item: QueuedEvent): ChangeEvent {
  return { ...item.event, data: decodeFreeJson(item.event.data) as ChangeEvent["data"] };
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
 * Settles an abandoned event (a prepared entry, or a write's own event id) by what the database shows: an event
 * committed already only loses its prepared entry (its commit was cut off before the drop); otherwise a delete is
 * committed when the record is gone, a create or update when the record exists (with `render`ed current state as
 * data), and else the change never happened and the event is dropped.
 */
export async function resolvePrepared(
  db: Connection,
  entry: Pick<StoredEvent, "_id" | "event_id" | "type" | "account_id" | "subject">,
  render: (record: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<"committed" | "dropped"> {
  const event = { ...entry, _id: eventIdOf(entry) };
  if (await log(db).findOne({ _id: event._id, state: "committed" }, { projection: { _id: 1 } })) {
    await dropPrepared(db, [event._id]);
    return "committed";
  }
  const [collection, id] = event.subject.split("/") as [string, string];
  const record = await db.collection(collection).findOne(tenantFilter(collection, { _id: Number(id), account_id: event.account_id }) as never);
  const deleted = event.type.endsWith(".deleted");
  if (deleted ? record === null : record !== null) {
    const data = deleted ? { id: Number(id) } : await render(record!);
    await commitEvents(db, [{ id: event._id, type: event.type, account_id: event.account_id, subject: event.subject, data }]);
    return "committed";
  }
  await abortEvents(db, [event._id]);
  return "dropped";
}

/**
 * Settles an abandoned block cover (CreateCover): commits the created event of each record of the block whose event
 * is not in the log, with its `render`ed current state, then drops the cover. The block's ids are global, so its
 * records belong to any account. Returns how many events it committed.
 */
export async function settleIdBlock(
  db: Connection,
  cover: Pick<StoredEvent, "_id" | "type" | "subject" | "ids">,
  render: (record: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<number> {
  const collection = cover.subject.slice(0, cover.subject.indexOf("/"));
  const { first, last } = cover.ids!;
  // Every account's records: the block's ids are global. Only the ids first; a record is read whole to be rendered.
  const records = db.collection<{ _id: number; account_id: number }>(collection);
  const stored = await records.find({ _id: { $gte: first, $lte: last } }, { projection: { _id: 1 } }).toArray();
  const eventIds = new Map(stored.map(({ _id }) => [eventIdFor(cover.type, subjectOf([collection, _id])), _id]));
  for (const logged of await log(db).find({ _id: { $in: [...eventIds.keys()] }, state: "committed" }, { projection: { _id: 1 } }).toArray()) eventIds.delete(logged._id);
  let committed = 0;
  if (eventIds.size) {
    const unlogged = await records.find({ _id: { $in: [...eventIds.values()] } }).toArray();
    const events = await Promise.all(
      unlogged.map(async (record) => {
        const subject = subjectOf([collection, record._id]);
        return { id: eventIdFor(cover.type, subject), type: cover.type, account_id: record.account_id, subject, data: await render(record) };
      }),
    );
    committed = await commitEvents(db, events);
  }
  await log(db).deleteOne({ _id: cover._id, state: "prepared" });
  return committed;
}

/**
 * How long an event held back behind an older one of its record stays out of claims: the claimer's next claim in
 * the same pass takes other events instead of the same ones again, and the held event is looked at again after it.
 */
export const HELD_BACK_MS = 250;

/** What a claim took: the events ready to handle, and how many it claimed, those it held back included. */
export interface EventClaim {
  ready: QueuedEvent[];
  claimed: number;
}

/**
 * Claims up to `limit` of a group's oldest unhandled events for `owner` until now + leaseMs, then holds back
 * every event whose record has an older event this group has not acknowledged (another replica holds it, or
 * it failed) for HELD_BACK_MS: per record, a group sees events in seq order. The ready events come in seq order,
 * which is that order for each record. With `queuedBefore`, only events queued before it (a replica that was not woken).
 */
export async function claimEvents(db: Connection, group: string, owner: string, leaseMs: number, limit: number, queuedBefore?: Date): Promise<EventClaim> {
  const filter = queuedBefore ? { group, queued_at: { $lt: queuedBefore } } : { group };
  const claimed = await eventQueue(db).claimBatch(owner, leaseMs, limit, { filter, sort: { queued_at: 1 } });
  if (!claimed.length) return { ready: [], claimed: 0 };
  // By subject only, the group checked here: with the group in the filter the local server's SQLite took the group's
  // index and read the group's whole backlog per claim (docs/adr/0060-claims-cost-their-batch.md).
  const older = await queue(db)
    .find(
      { subject: { $in: [...new Set(claimed.map((e) => e.subject))] }, seq: { $lt: Math.max(...claimed.map((e) => e.seq)) }, _id: { $nin: claimed.map((e) => e._id) } },
      { projection: { group: 1, subject: 1, seq: 1 } },
    )
    .toArray();
  const firstWaiting = new Map<string, number>();
  for (const o of older) if (o.group === group) firstWaiting.set(o.subject, Math.min(firstWaiting.get(o.subject) ?? Infinity, o.seq));
  const isReady = (e: QueuedEvent) => e.seq < (firstWaiting.get(e.subject) ?? Infinity);
  const ready = claimed.filter(isReady).sort((a, b) => a.seq - b.seq);
  await releaseEvents(db, owner, claimed.filter((e) => !isReady(e)).map((e) => e._id), HELD_BACK_MS);
  return { ready, claimed: claimed.length };
}

/** The work-item queue (lib/lease-queue.ts): an item is free once claim_until is past, which a release with a delay sets ahead. */
function eventQueue(db: Connection): LeaseQueue<QueuedEvent> {
  return new LeaseQueue(collectionStore(queue(db)), { owner: "claimed_by", until: "claim_until", vacant: new Date(0), changedOnlyByClaims: true });
}

/** Marks items `owner` claimed handled: their group is done with those events. */
export async function acknowledgeEvents(db: Connection, owner: string, itemIds: string[]): Promise<void> {
  if (itemIds.length) await eventQueue(db).complete({ _id: { $in: itemIds } }, owner, { remove: true });
}

/** Gives items `owner` claimed back, to be claimed again after `delayMs` (a failed handler backs off). */
export async function releaseEvents(db: Connection, owner: string, itemIds: string[], delayMs: number): Promise<void> {
  if (itemIds.length) await eventQueue(db).release({ _id: { $in: itemIds } }, owner, { retryAt: new Date(Date.now() + delayMs) });
}

/** Log entries committed before `before`: only committed entries have a committed_at (null while prepared). */
export function committedBefore(before: Date) {
  // Without `state`: SQLite took the {state, occurred_at} index for its equality and read every committed entry of
  // the retention period; the committed_at index gives the range to delete (docs/adr/0060-claims-cost-their-batch.md).
  return { committed_at: { $lt: before } };
}

/**
 * Deletes committed events from the log after `retainedBefore`, and queued items no group took since
 * `pendingBefore` (a group absent that long loses them). Prepared events are settled, never pruned here.
 */
export async function pruneEvents(db: Connection, retainedBefore: Date, pendingBefore: Date): Promise<number> {
  const [events, items] = await Promise.all([
    log(db).deleteMany(committedBefore(retainedBefore)),
    queue(db).deleteMany({ queued_at: { $lt: pendingBefore } }),
  ]);
  return events.deletedCount + items.deletedCount;
}
