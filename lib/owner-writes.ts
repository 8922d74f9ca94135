import type { Connection, Model } from "mongoose";
import { ERRORS, isDuplicateKeyError } from "./errors";
import type { Ctx } from "./meta";
import type { TenancyMethods } from "./tenancy.mixin";
import { UnitOfWork, type LoggedUndo, type PreparedChange, type PutTarget } from "./unit-of-work";

/*
 * Writes that span services, through each collection's owner (docs/adr/0052-service-boundaries.md). The owner
 * exposes three internal actions (ownerWriteActions); the service that needs the writes (team push) drives them
 * with an OwnerWrites, as a saga with compensation instead of a transaction (the store has none, lib/unit-of-work.ts):
 *
 *   <owner>.putBatch   writes the items in the owner's unit of work, events prepared; returns the records, the
 *                      prepared events and the undo log. A failed batch undoes itself before it throws.
 *   <owner>.commitBatch commits the prepared events, each rendered by the owner as its own changes are.
 *   <owner>.undoBatch  undoes a batch (newest write first) and drops its events: the caller's compensation.
 */

type Owned = { _id: number; account_id: number };

/** One record of a batch: the id of the record it updates, or null and the identifier of the one it creates; and what to write. */
export type BatchItem<Def> = { id: number; def: Def } | { id: null; identifier: string; def: Def };

/** What putBatch answers: the records as written, in the order of the items, and how to commit or undo them. */
export interface BatchResult<T> {
  records: T[];
  changes: PreparedChange[];
  undo: LoggedUndo[];
}

/** How an owner reads and writes its records for a batch (its store functions). */
export interface OwnerWriteOptions<T extends Owned, Def> {
  model: (db: Connection) => Model<T>;
  /** The account's records with these ids. */
  read: (db: Connection, accountId: number, ids: number[]) => Promise<T[]>;
  /** One record written within the unit of work: `existing` updated where it differs, or created. */
  put: (uow: UnitOfWork, db: Connection, accountId: number, target: PutTarget<T>, def: Def) => Promise<T>;
}

/** The `data.reason` of the 409 a batch answers when a write collided or a record changed under it: plan again. */
const REPLAN = "replan";

/**
 * True when a write spanning owners should be planned again and retried: a unique identifier collided (a
 * concurrent write took it), here or in an owner's batch, or a record planned against was deleted meanwhile.
 */
export function isReplanError(err: unknown): boolean {
  return isDuplicateKeyError(err) || (err as { data?: { reason?: string } } | null)?.data?.reason === REPLAN;
}

/** A batch is committed or undone only for the account that wrote it. */
function mustBeOwnAccount(accounts: number[], accountId: number): void {
  if (accounts.some((a) => a !== accountId)) throw ERRORS.forbidden("A batch of another account");
}

const changesParam = { changes: { type: "array", items: "object" } } as const;

/**
 * putBatch, commitBatch and undoBatch for an owner's collection (a service with TenancyMixin and EventsMixin).
 * Internal: called service to service, never routed; the account is the caller's, from ctx.meta (accountOf).
 */
export function ownerWriteActions<T extends Owned, Def>(options: OwnerWriteOptions<T, Def>) {
  return {
    putBatch: {
      visibility: "public" as const,
      params: { items: { type: "array", items: "object" } },
      async handler(this: TenancyMethods & { db: Connection }, ctx: Ctx<{ items: BatchItem<Def>[] }>): Promise<BatchResult<T>> {
        const accountId = this.accountOf(ctx);
        const { items } = ctx.params;
        const ids = [...new Set(items.flatMap((item) => (item.id === null ? [] : [item.id])))];
        const existing = ids.length ? await options.read(this.db, accountId, ids) : [];
        const uow = new UnitOfWork();
        try {
          const records: T[] = [];
          for (const item of items) {
            const current = item.id === null ? null : existing.find((r) => r._id === item.id);
            if (current === undefined) throw ERRORS.conflict(`Record ${item.id} changed during the write; plan again`, { reason: REPLAN });
            const target: PutTarget<T> = item.id === null ? { identifier: item.identifier } : { existing: current! };
            records.push(await options.put(uow, this.db, accountId, target, item.def));
          }
          return { records, changes: [...uow.changes], undo: uow.undoLog() };
        } catch (err) {
          await uow.rollback();
          // A MongoDB error does not keep its code across the transporter; this one travels by name.
          throw isDuplicateKeyError(err) ? ERRORS.conflict("A unique identifier collided with a concurrent write; plan again", { reason: REPLAN }) : err;
        }
      },
    },

    commitBatch: {
      visibility: "public" as const,
      params: changesParam,
      async handler(this: TenancyMethods & { commitRendered(changes: PreparedChange[]): Promise<void> }, ctx: Ctx<{ changes: PreparedChange[] }>) {
        const accountId = this.accountOf(ctx);
        mustBeOwnAccount(ctx.params.changes.map((c) => c.draft.accountId), accountId);
        await this.commitRendered(ctx.params.changes);
      },
    },

    undoBatch: {
      visibility: "public" as const,
      params: { ...changesParam, undo: { type: "array", items: "object" } },
      async handler(this: TenancyMethods & { db: Connection }, ctx: Ctx<{ changes: PreparedChange[]; undo: LoggedUndo[] }>) {
        const { changes, undo } = ctx.params;
        const accountId = this.accountOf(ctx);
        mustBeOwnAccount([...changes.map((c) => c.draft.accountId), ...undo.flatMap((u) => [u.accountId, (u.before?.account_id as number | undefined) ?? accountId])], accountId);
        await UnitOfWork.restore(options.model(this.db), undo, changes).rollback();
      },
    },
  };
}

/** Calls an action of another service with the caller's meta (broker.call with the caller's ctx as parentCtx). */
export type ActionCall = <R>(action: string, params: object, opts?: { timeout?: number }) => Promise<R>;

/**
 * The caller's side: batches written through their owners, in order, committed together at the end or undone
 * newest first. Every batch is undone even when one undo fails (the rest still run).
 */
export class OwnerWrites {
  private readonly done: { owner: string; changes: PreparedChange[]; undo: LoggedUndo[] }[] = [];

  /** `warn` hears of an undo that failed (its batch stays written; the owner's sweep settles its events). */
  constructor(
    private readonly call: ActionCall,
    private readonly warn: (message: string, err: unknown) => void = () => undefined,
  ) {}

  /** Writes `items` through `owner`'s putBatch, for the caller's account; the records come back in their order. */
  async put<T, Def>(owner: string, items: BatchItem<Def>[]): Promise<T[]> {
    if (!items.length) return [];
    // No request timeout: a batch the caller gave up on would go on writing after the caller had undone the
    // others. The owner's database calls have their own timeouts, and a batch that fails undoes itself.
    const result = await this.call<BatchResult<T>>(`${owner}.putBatch`, { items }, { timeout: 0 });
    this.done.push({ owner, changes: result.changes, undo: result.undo });
    return result.records;
  }

  /** Commits every batch's events, in the order they were written. */
  async commit(): Promise<void> {
    for (const { owner, changes } of this.done) if (changes.length) await this.call(`${owner}.commitBatch`, { changes });
  }

  /** Undoes every batch, newest first; an undo that fails leaves its events prepared for the owner's sweep. */
  async rollback(): Promise<void> {
    for (const { owner, changes, undo } of this.done.reverse()) {
      await this.call(`${owner}.undoBatch`, { changes, undo }).catch((err) => this.warn(`Undoing a ${owner} batch failed`, err));
    }
    this.done.length = 0;
  }
}
