import type { Connection, Model } from "mongoose";
import { abortEvents, changeOf, prepareEvents, type ChangeDraft } from "./events";

type AnyRecord = { _id: number; account_id: number };

interface Undo {
  model: Model<any>;
  id: number;
  accountId: number;
  /** The record before the change; null when the change created it. */
  before: Record<string, unknown> | null;
}

/**
 * A change set over several collections with compensation instead of transactions (the MongoDB-compatible
 * server has none): every write records how to undo it, and rollback undoes them newest first. Callers
 * validate everything before the first write, so rollback is for infrastructure failures and races.
 */
export class UnitOfWork {
  private readonly undos: Undo[] = [];
  /** Change events prepared before each write (lib/events.ts), for the caller to commit with their data. */
  readonly changes: { id: string; draft: ChangeDraft }[] = [];
  private eventsDb?: Connection;

  /** Inserts a record, remembering to delete it on rollback; `event` names its change event (e.g. agent.created). */
  async insert<T extends AnyRecord>(model: Model<T>, doc: T, event?: string): Promise<T> {
    if (event) await this.prepare(model, doc, event);
    const created = (await model.create(doc)).toObject() as T;
    this.undos.push({ model, id: doc._id, accountId: doc.account_id, before: null });
    return created;
  }

  /** Sets fields of an existing record, remembering its previous state. No-op when nothing changes. */
  async update<T extends AnyRecord>(model: Model<T>, before: T, changes: Partial<T>, event?: string): Promise<T> {
    if (!Object.keys(changes).length) return before;
    if (event) await this.prepare(model, before, event);
    const after = await model
      .findOneAndUpdate({ _id: before._id, account_id: before.account_id } as never, { $set: changes }, { returnDocument: "after", runValidators: true })
      .lean<T>();
    this.undos.push({ model, id: before._id, accountId: before.account_id, before: before as unknown as Record<string, unknown> });
    return after ?? before;
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
        if (undo.before) await undo.model.collection.replaceOne(filter as never, undo.before);
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
