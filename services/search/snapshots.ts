import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "moleculer";
import type { LocalIndex } from "../../lib/search/engines";
import { removeOthers } from "../../lib/search/snapshot-file";
import { isDuplicateKeyError } from "../../lib/errors";
import { accountStateId, SNAPSHOT_MARKER, type IndexGenerations } from "./generations";
import type { IndexStateRecord } from "./model";
import { rebuildEmbedded, type StoreDeps } from "./store";

export interface SnapshotKeeperOptions {
  engine: LocalIndex;
  generations: IndexGenerations;
  /** This database's snapshot directory (one sub-directory per account). */
  dir: string;
  /** Write a snapshot this long after an account's last write... */
  settleMs: number;
  /** ...but no later than this after its first unsnapshotted write, even while writes go on. */
  maxDelayMs: number;
  logger: Pick<Logger, "info" | "warn" | "debug">;
}

/** How the index came back at start. */
export interface RestoreReport {
  /** No snapshot marker in MongoDB: first start with snapshots, or a new database; everything was rebuilt. */
  firstStart: boolean;
  fromSnapshot: number[];
  rebuilt: number[];
  /** Why each rebuilt account's snapshot was not used (missing, stale, incompatible, corrupt). */
  reasons: Record<number, string>;
  chunksFromSnapshots: number;
  chunksFromMongo: number;
  ms: number;
}

interface Dirty {
  /** When the first unsnapshotted write settled. */
  since: number;
  timer?: NodeJS.Timeout;
  /** The delay has passed: write as soon as the account is settled. */
  due: boolean;
}

/**
 * Keeps snapshots of the embedded index under DATA_DIR and brings the index back from them at start.
 *
 * Start (`restore`): every account's snapshot is loaded if its stamp equals the account's generation in
 * MongoDB (and the database epoch), otherwise that account alone is rebuilt from MongoDB; all stale
 * accounts share one read of search_chunks. After writes an account's snapshot is rewritten once writes
 * settle (settleMs after the last one, at most maxDelayMs after the first), only at a moment when no batch
 * of it is in flight, and on stop.
 */
export class SnapshotKeeper {
  private epoch = "";
  private readonly dirty = new Map<number, Dirty>();
  private readonly writing = new Map<number, Promise<void>>();
  private readonly warnedDiverged = new Set<number>();
  private stopping = false;

  constructor(private readonly options: SnapshotKeeperOptions) {
    options.generations.onWritten = (a) => this.changed(a);
    options.generations.onSettled = (a) => this.settled(a);
  }

  private dirOf(accountId: number): string {
    return path.join(this.options.dir, String(accountId));
  }

  async restore(deps: StoreDeps): Promise<RestoreReport> {
    const started = Date.now();
    const { engine, generations, dir } = this.options;
    const { state } = deps.models;
    const report: RestoreReport = { firstStart: false, fromSnapshot: [], rebuilt: [], reasons: {}, chunksFromSnapshots: 0, chunksFromMongo: 0, ms: 0 };
    let marker = await state.findById(SNAPSHOT_MARKER).lean<IndexStateRecord>();
    if (!marker) {
      // Chunks may predate generations (or the database is new): read everything, then start counting.
      report.firstStart = true;
      await rm(dir, { recursive: true, force: true });
      const rebuilt = await rebuildEmbedded(deps, engine);
      await Promise.all(
        [...rebuilt.accounts].map((a) =>
          state.updateOne({ _id: accountStateId(a) }, { $setOnInsert: { account_id: a, generation: 0 } }, { upsert: true }),
        ),
      );
      try {
        await state.create({ _id: SNAPSHOT_MARKER, epoch: randomUUID() });
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      marker = await state.findById(SNAPSHOT_MARKER).lean<IndexStateRecord>();
      report.rebuilt = [...rebuilt.accounts];
      report.chunksFromMongo = rebuilt.chunks;
    }
    this.epoch = marker!.epoch!;
    const accounts = (await state.find({}).lean<IndexStateRecord[]>()).filter((s) => typeof s.account_id === "number");
    const stale: number[] = [];
    for (const s of accounts) {
      const accountId = s.account_id!;
      const generation = s.generation ?? 0;
      generations.seed(accountId, generation);
      if (report.firstStart) continue;
      const loaded = await engine.loadSnapshot(accountId, this.dirOf(accountId), { epoch: this.epoch, generation });
      if (loaded.ok) {
        report.fromSnapshot.push(accountId);
        report.chunksFromSnapshots += loaded.chunks;
      } else {
        stale.push(accountId);
        report.reasons[accountId] = loaded.reason;
      }
    }
    if (stale.length) {
      for (const a of stale) engine.dropPartition(a);
      const rebuilt = await rebuildEmbedded(deps, engine, stale);
      report.rebuilt = stale;
      report.chunksFromMongo = rebuilt.chunks;
    }
    // Directories of accounts MongoDB has no state for are left over (another epoch, a dropped database).
    await removeOthers(dir, new Set(accounts.map((s) => String(s.account_id))));
    // Every account without a usable snapshot gets one soon (an empty one too, so it is not read again).
    for (const a of report.firstStart ? accounts.map((s) => s.account_id!) : stale) this.changed(a);
    report.ms = Date.now() - started;
    return report;
  }

  /** An account was written: its snapshot is out of date; schedule the next one. */
  private changed(accountId: number) {
    if (this.stopping) return;
    const now = Date.now();
    let d = this.dirty.get(accountId);
    if (!d) this.dirty.set(accountId, (d = { since: now, due: false }));
    if (d.due) return;
    clearTimeout(d.timer);
    const at = Math.min(now + this.options.settleMs, d.since + this.options.maxDelayMs);
    d.timer = setTimeout(() => {
      d!.timer = undefined;
      d!.due = true;
      this.settled(accountId);
    }, Math.max(0, at - now));
    d.timer.unref();
  }

  /** No batch of the account in flight: write its snapshot if one is due. */
  private settled(accountId: number) {
    const d = this.dirty.get(accountId);
    if (!d?.due || this.writing.has(accountId) || !this.options.generations.settled(accountId)) return;
    void this.write(accountId);
  }

  /** Writes an account's snapshot now; the caller has checked it is settled (synchronously before this). */
  private write(accountId: number): Promise<void> {
    const { engine, generations, logger } = this.options;
    const d = this.dirty.get(accountId);
    if (d) clearTimeout(d.timer);
    this.dirty.delete(accountId);
    if (generations.diverged(accountId)) {
      if (!this.warnedDiverged.has(accountId)) {
        this.warnedDiverged.add(accountId);
        logger.warn(`Search index of account ${accountId} may lack a failed write; not snapshotted again, the next start rebuilds it`);
      }
      return Promise.resolve();
    }
    const stamp = { epoch: this.epoch, generation: generations.generation(accountId) };
    // writeSnapshot takes the partition's write lock before its first await: nothing changes under the stamp.
    const job = engine
      .writeSnapshot(accountId, this.dirOf(accountId), stamp)
      .then((w) => logger.debug(`Search snapshot of account ${accountId}: ${w.chunks} chunks, ${w.bytes} bytes in ${w.ms} ms`))
      .catch((err) => {
        logger.warn(`Search snapshot of account ${accountId} failed; retried after the next write or at stop`, (err as Error).message);
        if (!this.dirty.has(accountId)) this.dirty.set(accountId, { since: Date.now(), due: false });
      })
      .finally(() => {
        this.writing.delete(accountId);
        this.settled(accountId);
      });
    this.writing.set(accountId, job);
    return job;
  }

  /** Accounts written since their last snapshot. */
  get pending(): number[] {
    return [...this.dirty.keys()];
  }

  /**
   * Writes every outstanding snapshot now (service stop): waits up to `timeoutMs` for accounts with batches
   * in flight to settle; an account that does not stays stale and is rebuilt at the next start.
   */
  async flush(timeoutMs = 10_000) {
    this.stopping = true;
    const deadline = Date.now() + timeoutMs;
    for (const d of this.dirty.values()) clearTimeout(d.timer);
    await Promise.all(this.writing.values());
    for (const accountId of [...this.dirty.keys()]) {
      while (!this.options.generations.settled(accountId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      if (!this.options.generations.settled(accountId)) {
        this.options.logger.warn(`Search index of account ${accountId} still being written at stop; the next start rebuilds it`);
        continue;
      }
      await this.write(accountId);
    }
    await Promise.all(this.writing.values());
  }

  /** Writes outstanding snapshots at once without stopping (tests and the benchmark). */
  async snapshotNow() {
    await Promise.all(this.writing.values());
    const jobs: Promise<void>[] = [];
    for (const accountId of [...this.dirty.keys()]) if (this.options.generations.settled(accountId)) jobs.push(this.write(accountId));
    await Promise.all(jobs);
  }
}
