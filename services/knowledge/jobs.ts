import { randomUUID } from "node:crypto";
import type { Model } from "mongoose";
import type { JobKind, LoadJobRecord } from "./model";
import { crossAccount } from "../../lib/tenancy-guard";

/** Job ids double as the interface's event_id / job_id. */
export function newJobId(kind: JobKind): string {
  return `${kind === "load" ? "load" : "del"}_${randomUUID().replace(/-/g, "")}`;
}

/** Queues a job; a load for a source that already has one pending or running returns that one instead. */
export async function enqueueJob(
  jobs: Model<LoadJobRecord>,
  job: Pick<LoadJobRecord, "kind" | "account_id" | "knowledge_source_id"> & Partial<LoadJobRecord>,
): Promise<{ job: LoadJobRecord; created: boolean }> {
  if (job.kind === "load") {
    const active = await jobs
      .findOne({ kind: "load", account_id: job.account_id, knowledge_source_id: job.knowledge_source_id, status: { $in: ["pending", "running"] } })
      .lean<LoadJobRecord>();
    if (active) return { job: active, created: false };
  }
  const created = await jobs.create({ _id: newJobId(job.kind), status: "pending", ...job });
  return { job: created.toObject(), created: true };
}

/**
 * Claims a job for `owner`: a pending one, or a running one whose lease expired (its loader died). Fair across
 * accounts: the oldest job of an account with nothing running anywhere goes first, then the oldest of any
 * account; accounts in `skipAccounts` (those filling their share of the caller's slots) are never picked. One
 * atomic update per claim, so two loaders never hold the same job; which accounts are running is read just
 * before, so two loaders may each start one job of the same idle account (a preference, not a lock).
 */
export async function claimJob(
  jobs: Model<LoadJobRecord>,
  owner: string,
  leaseMs: number,
  kinds: JobKind[],
  skipAccounts: number[] = [],
): Promise<LoadJobRecord | null> {
  const now = new Date();
  const running = await crossAccount(
    "which accounts have loads running, to start an idle account's first",
    jobs.find({ status: "running", lease_expires_at: { $gte: now } }, { account_id: 1 }),
  ).lean<Pick<LoadJobRecord, "account_id">[]>();
  const busy = [...new Set([...skipAccounts, ...running.map((job) => job.account_id)])];
  return (await claimOldest(jobs, owner, leaseMs, kinds, busy, now)) ?? (busy.length > skipAccounts.length ? claimOldest(jobs, owner, leaseMs, kinds, skipAccounts, now) : null);
}

/** Claims the oldest claimable job of an account not in `exclude`. */
function claimOldest(jobs: Model<LoadJobRecord>, owner: string, leaseMs: number, kinds: JobKind[], exclude: number[], now: Date): Promise<LoadJobRecord | null> {
  const claim = jobs.findOneAndUpdate(
    {
      kind: { $in: kinds },
      ...(exclude.length ? { account_id: { $nin: exclude } } : {}),
      $or: [{ status: "pending" }, { status: "running", lease_expires_at: { $lt: now } }],
    },
    { $set: { status: "running", lease_owner: owner, lease_expires_at: new Date(now.getTime() + leaseMs) }, $inc: { attempts: 1 } },
    { sort: { queued_at: 1 }, returnDocument: "after" },
  );
  return crossAccount("loaders claim the oldest job of any account", claim).lean<LoadJobRecord>();
}

/** Extends the lease while the owner still holds it; false means another loader took the job over. */
export async function renewLease(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string, leaseMs: number): Promise<boolean> {
  const res = await jobs.updateOne(
    { _id: job._id, account_id: job.account_id, lease_owner: owner, status: "running" },
    { $set: { lease_expires_at: new Date(Date.now() + leaseMs) } },
  );
  return res.matchedCount === 1;
}

/** Records progress (only while the owner still holds the lease). */
export async function saveProgress(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string, progress: object): Promise<boolean> {
  const res = await jobs.updateOne({ _id: job._id, account_id: job.account_id, lease_owner: owner, status: "running" }, { $set: { progress } });
  return res.matchedCount === 1;
}

/** Ends a job as done or failed (only while the owner still holds the lease). */
export async function finishJob(
  jobs: Model<LoadJobRecord>,
  job: Pick<LoadJobRecord, "_id" | "account_id">,
  owner: string,
  outcome: { status: "done" | "failed"; error?: string | null },
): Promise<boolean> {
  const res = await jobs.updateOne(
    { _id: job._id, account_id: job.account_id, lease_owner: owner, status: "running" },
    { $set: { status: outcome.status, error: outcome.error ?? null, lease_owner: null, lease_expires_at: null } },
  );
  return res.matchedCount === 1;
}

/**
 * Re-queues a load job as its own continuation (next window, saved progress) in one atomic write, so a
 * crash can neither lose the continuation nor leave two jobs for one source. It goes to the back of the queue.
 */
export async function continueJob(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id" | "window">, owner: string, progress: object): Promise<boolean> {
  const res = await jobs.updateOne(
    { _id: job._id, account_id: job.account_id, lease_owner: owner, status: "running" },
    { $set: { status: "pending", window: job.window + 1, progress, lease_owner: null, lease_expires_at: null, queued_at: new Date() } },
  );
  return res.matchedCount === 1;
}

/** Gives a job back to the queue at once (graceful shutdown), keeping its progress. */
export async function releaseJob(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string): Promise<void> {
  await jobs.updateOne({ _id: job._id, account_id: job.account_id, lease_owner: owner, status: "running" }, { $set: { status: "pending", lease_owner: null, lease_expires_at: null } });
}

/** Fails a source's queued loads (its deletion started). */
export async function cancelPendingLoads(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "account_id" | "knowledge_source_id">): Promise<void> {
  await jobs.updateMany(
    { account_id: job.account_id, knowledge_source_id: job.knowledge_source_id, kind: "load", status: "pending" },
    { $set: { status: "failed", error: "source deleted" } },
  );
}

/** Pending jobs: the depth an autoscaler reads. */
export function pendingJobs(jobs: Model<LoadJobRecord>): Promise<number> {
  return crossAccount("queue depth over every account", jobs.countDocuments({ status: "pending" }));
}
