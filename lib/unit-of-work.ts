import type { Model } from "mongoose";

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

  /** Inserts a record, remembering to delete it on rollback. */
  async insert<T extends AnyRecord>(model: Model<T>, doc: T): Promise<T> {
    const created = (await model.create(doc)).toObject() as T;
    this.undos.push({ model, id: doc._id, accountId: doc.account_id, before: null });
    return created;
  }

  /** Sets fields of an existing record, remembering its previous state. No-op when nothing changes. */
  async update<T extends AnyRecord>(model: Model<T>, before: T, changes: Partial<T>): Promise<T> {
    if (!Object.keys(changes).length) return before;
    const after = await model
      .findOneAndUpdate({ _id: before._id, account_id: before.account_id } as never, { $set: changes }, { returnDocument: "after", runValidators: true })
      .lean<T>();
    this.undos.push({ model, id: before._id, accountId: before.account_id, before: before as unknown as Record<string, unknown> });
    return after ?? before;
  }

  /** Undoes every recorded write, newest first; keeps going past individual failures. */
  async rollback(): Promise<void> {
    for (const undo of this.undos.reverse()) {
      const filter = { _id: undo.id, account_id: undo.accountId };
      try {
        // Through the model, so free-form fields are stored encoded again (lib/free-json); timestamps as they were.
        if (undo.before) await undo.model.replaceOne(filter, undo.before, { timestamps: false });
        else await undo.model.collection.deleteOne(filter as never);
      } catch {
        // Best effort: the remaining undos still run.
      }
    }
    this.undos.length = 0;
  }
}
