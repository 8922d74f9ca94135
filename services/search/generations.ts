import type { Model } from "mongoose";
import type { IndexStateRecord } from "./model";

/** search_index_state ids (see IndexStateRecord). */
export const SNAPSHOT_MARKER = "snapshots";
export const DELETION_QUEUE_MARKER = "deletion-queue";
export function accountStateId(accountId: number): string {
  return `account:${accountId}`;
}

/**
 * Per-account write generations: the high-water mark a snapshot of the embedded index is checked against.
 *
 * Every batch of chunk writes of an account runs inside `write`, which increments the account's generation
 * in MongoDB (one _id update) *before* the batch writes anything. So whatever MongoDB holds beyond a
 * snapshot, its generation is beyond the snapshot's: a crash at any point leaves a snapshot that no longer
 * matches, and that account is rebuilt from MongoDB. A snapshot may only be taken of an account with no
 * batch in flight (`settled`), stamped with the generation this process last issued; a batch that fails
 * half-way may have written MongoDB without the index, so unless it is resumable its account is never
 * snapshotted again by this process (the next start rebuilds it).
 */
export class IndexGenerations {
  private readonly inflight = new Map<number, number>();
  private readonly issued = new Map<number, number>();
  private readonly failed = new Set<number>();
  /** Called after every batch with the accounts it wrote (their generation moved on). */
  onWritten?: (accountId: number) => void;
  /** Called when an account has no batch in flight any more. */
  onSettled?: (accountId: number) => void;

  constructor(private readonly state: Model<IndexStateRecord>) {}

  /**
   * Runs one batch of chunk writes (MongoDB and index) of the given accounts. `resumable`: a durable queue
   * entry outlives a failure of this batch (pending embeddings, queued deletions) and the batch is redone,
   * in this process or after a restart, so a failure does not leave MongoDB ahead of the index for good.
   */
  async write<T>(accounts: number | number[], batch: () => Promise<T>, options: { resumable?: boolean } = {}): Promise<T> {
    const ids = [...new Set(Array.isArray(accounts) ? accounts : [accounts])];
    for (const a of ids) this.inflight.set(a, (this.inflight.get(a) ?? 0) + 1);
    let started = false;
    try {
      const generations = await Promise.all(ids.map((a) => this.bump(a)));
      ids.forEach((a, i) => this.issued.set(a, Math.max(this.issued.get(a) ?? 0, generations[i]!)));
      started = true;
      return await batch();
    } catch (err) {
      if (started && !options.resumable) for (const a of ids) this.failed.add(a);
      throw err;
    } finally {
      for (const a of ids) {
        const left = this.inflight.get(a)! - 1;
        if (left) this.inflight.set(a, left);
        else this.inflight.delete(a);
      }
      for (const a of ids) this.onWritten?.(a);
      for (const a of ids) if (!this.inflight.has(a)) this.onSettled?.(a);
    }
  }

  private async bump(accountId: number): Promise<number> {
    const doc = await this.state
      .findOneAndUpdate(
        { _id: accountStateId(accountId) },
        { $inc: { generation: 1 }, $set: { account_id: accountId } },
        { upsert: true, returnDocument: "after" },
      )
      .lean<IndexStateRecord>();
    return doc!.generation!;
  }

  /** The generation MongoDB had at start (nothing written by this process yet). */
  seed(accountId: number, generation: number) {
    this.issued.set(accountId, Math.max(this.issued.get(accountId) ?? 0, generation));
  }

  /** The account's generation as far as this process knows (exact while it is settled). */
  generation(accountId: number): number {
    return this.issued.get(accountId) ?? 0;
  }

  settled(accountId: number): boolean {
    return !this.inflight.has(accountId);
  }

  /** Whether a batch of the account failed after starting (its index may lack what MongoDB has). */
  diverged(accountId: number): boolean {
    return this.failed.has(accountId);
  }
}
