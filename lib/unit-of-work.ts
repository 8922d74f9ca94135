import { isDeepStrictEqual } from "node:util";
import mongoose, { type Connection, type Model } from "mongoose";
import { createRecord } from "./db";
import { abortEvents, changeOf, prepareEvents, type ChangeDraft } from "./events";
import { nextRecordId } from "./ids";

type AnyRecord = { _id: number; account_id: number };

/** What a put writes: the existing record it updates, or the identifier of the record it creates. */
export type PutTarget<T> = { existing: T } | { identifier: string };

/**
 * A field of a definition a put writes (team push's agents, tools and traits): absent, the existing record's value
 * stays; null, or absent on a new record, it takes its default.
 */
export function definedField<T, K extends keyof T>(existing: T | null, key: K, value: T[K] | null | undefined, fallback: T[K]): T[K] {
  if (value === undefined) return existing ? existing[key] : fallback;
  return value ?? fallback;
}

interface Undo {
  model: Model<any>;
  id: number;
  accountId: number;
  /** The record before the change; null when the change created it. */
  before: Record<string, unknown> | null;
}

/** One write of a unit of work as plain data, so the service that asked for it can hand it back to be undone. */
export type LoggedUndo = Omit<Undo, "model">;

/** A change event prepared by a unit of work, to be committed with its data or dropped. */
export type PreparedChange = { id: string; draft: ChangeDraft };

/**
 * A change set over several collections with compensation instead of transactions (the MongoDB-compatible
 * server has none): every write records how to undo it, and rollback undoes them newest first. Callers
 * validate everything before the first write, so rollback is for infrastructure failures and races.
 */
export class UnitOfWork {
  private readonly undos: Undo[] = [];
  /** Change events prepared before each write (lib/events.ts), for the caller to commit with their data. */
  readonly changes: PreparedChange[] = [];
  private eventsDb?: Connection;

  /**
   * The unit of work another service's writes left, over `model`: its rollback undoes `log` and drops `changes`
   * (lib/owner-writes.ts, the compensation of a write that spans owners).
   */
  static restore(model: Model<any>, log: LoggedUndo[], changes: PreparedChange[]): UnitOfWork {
    const uow = new UnitOfWork();
    uow.undos.push(...log.map((undo) => ({ ...undo, model })));
    uow.changes.push(...changes);
    if (changes.length) uow.eventsDb = model.db;
    return uow;
  }

  /** What rollback would undo, oldest first, as plain data (see restore). */
  undoLog(): LoggedUndo[] {
    return this.undos.map(({ id, accountId, before }) => ({ id, accountId, before }));
  }

  /** Inserts a record, remembering to delete it on rollback; `event` names its change event (e.g. agent.created). */
  async insert<T extends AnyRecord>(model: Model<T>, doc: T, event?: string): Promise<T> {
    if (event) await this.prepare(model, doc, event);
    const created = await createRecord(model, doc);
    this.undos.push({ model, id: doc._id, accountId: doc.account_id, before: null });
    return created;
  }

  /**
   * Sets fields of an existing record, remembering its previous state. No-op when nothing changes. Written
   * through a document, not an update query: mongoose clones update values and drops keys named "constructor"
   * or "prototype" inside them, which free-form values (lib/free-json) must keep.
   */
  async update<T extends AnyRecord>(model: Model<T>, before: T, changes: Partial<T>, event?: string): Promise<T> {
    if (!Object.keys(changes).length) return before;
    if (event) await this.prepare(model, before, event);
    const doc = model.hydrate(before);
    doc.set(changes);
    try {
      await doc.save();
    } catch (err) {
      // Deleted meanwhile: nothing to update, as with a no-match update.
      if (err instanceof mongoose.Error.DocumentNotFoundError) return before;
      throw err;
    }
    this.undos.push({ model, id: before._id, accountId: before.account_id, before: before as unknown as Record<string, unknown> });
    return doc.toObject() as T;
  }

  /**
   * Writes a named record from `fields`: sets what differs on the target's `existing` record, or creates one with a
   * new id under the target's `identifier`, which the caller planned (two concurrent creates of one identifier then
   * collide on the unique index, and the caller re-plans). The change event is `<entity>.updated` or `<entity>.created`.
   */
  async put<T extends AnyRecord>(model: Model<T>, accountId: number, target: PutTarget<T>, fields: Partial<T> & { name: string }, entity: string): Promise<T> {
    if ("existing" in target) return this.update(model, target.existing, changedFields(target.existing, fields), `${entity}.updated`);
    const _id = await nextRecordId(model.db, model.collection.collectionName);
    return this.insert(model, { _id, account_id: accountId, identifier: target.identifier, ...fields } as unknown as T, `${entity}.created`);
  }

  private async prepare(model: Model<any>, record: AnyRecord, event: string) {
    const draft = changeOf(event, model.collection.collectionName, record);
    this.eventsDb = model.db;
    const [id] = await prepareEvents(model.db, [draft]);
    this.changes.push({ id: id!, draft });
  }

  /** Undoes every recorded write, newest first, and drops their events; keeps going past individual failures. */
  async rollback(): Promise<void> {
    for (const undo of this.undos.reverse()) {
      const filter = { _id: undo.id, account_id: undo.accountId };
      try {
        // The record as a document stores it (free-form fields encoded, lib/free-json), timestamps as they were.
        if (undo.before) await undo.model.collection.replaceOne(filter as never, undo.model.hydrate(undo.before).toBSON());
        else await undo.model.collection.deleteOne(filter as never);
      } catch {
        // Best effort: the remaining undos still run.
      }
    }
    this.undos.length = 0;
    if (this.eventsDb) await abortEvents(this.eventsDb, this.changes.map((c) => c.id)).catch(() => undefined);
    this.changes.length = 0;
  }
}

/** The subset of `next` that differs from `current`, so a push that changes nothing writes nothing. */
export function changedFields<T extends object>(current: T | null, next: Partial<T>): Partial<T> {
  if (!current) return next;
  const out: Partial<T> = {};
  for (const [key, value] of Object.entries(next) as [keyof T, T[keyof T]][]) {
    if (!isDeepStrictEqual(normalize(current[key]), normalize(value))) out[key] = value;
  }
  return out;
}

function normalize(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value ?? null));
}
