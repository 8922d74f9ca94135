import { randomUUID } from "node:crypto";
import type { Model } from "mongoose";
import type { JobKind, JobStatus, LoadJobRecord } from "./model";
import { LeaseQueue, modelStore } from "../../lib/lease-queue";
import { crossAccount } from "../../lib/tenancy-guard";

/** Job ids double as the interface's event_id / job_id. */
export function newJobId(kind: JobKind): string {
  return `${kind === "load" || kind === "rechunk" ? kind : "del"}_${randomUUID().replace(/-/g, "")}`;
}

/**
 * Queues a job; a load for a source that already has one pending or running returns that one instead, and so does a
 * re-chunk for one pending (it reads the source's chunking when it runs); a running re-chunk gets a successor, which
 * waits for it (docs/adr/0059-chunking-per-source.md).
 */
export async function enqueueJob(
  jobs: Model<LoadJobRecord>,
  job: Pick<LoadJobRecord, "kind" | "account_id" | "knowledge_source_id"> & Partial<LoadJobRecord>,
): Promise<{ job: LoadJobRecord; created: boolean }> {
  if (job.kind === "load" || job.kind === "rechunk") {
    const statuses: JobStatus[] = job.kind === "load" ? ["pending", "running"] : ["pending"];
    const active = await jobs
      .findOne({ kind: job.kind, account_id: job.account_id, knowledge_source_id: job.knowledge_source_id, status: { $in: statuses } })
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
    jobs.find({ status: "running", lease_expires_at: { $gte: now } }, { account_id: 1, knowledge_source_id: 1, kind: 1 }),
  ).lean<Pick<LoadJobRecord, "account_id" | "knowledge_source_id" | "kind">[]>();
  const busy = [...new Set([...skipAccounts, ...running.map((job) => job.account_id)])];
  const writing = running.filter((job) => WRITERS.includes(job.kind));
  return (
    (await claimOldest(jobs, owner, leaseMs, kinds, busy, writing, now)) ??
    (busy.length > skipAccounts.length ? claimOldest(jobs, owner, leaseMs, kinds, skipAccounts, writing, now) : null)
  );
}

/**
 * The jobs that write a source's documents from its settings: one runs on a source at a time (a window each), so a
 * load never indexes with chunking a re-chunk has replaced meanwhile, and two writers never plan one document at once.
 */
const WRITERS: JobKind[] = ["load", "rechunk"];

/**
 * The load-job queue (lib/lease-queue.ts): a pending job, or a running one whose lease expired (its loader died),
 * is claimable; a claim sets it running and counts the attempt; a release sets it pending again.
 */
export function jobQueue(jobs: Model<LoadJobRecord>): LeaseQueue<LoadJobRecord> {
  return new LeaseQueue(modelStore(jobs), {
    owner: "lease_owner",
    until: "lease_expires_at",
    vacant: null,
    claimable: (now) => ({ $or: [{ status: "pending" }, { status: "running", lease_expires_at: { $lt: now } }] }),
    held: { status: "running" },
    onClaim: { $set: { status: "running" }, $inc: { attempts: 1 } },
    onRelease: { status: "pending" },
    crossAccount: "loaders claim the oldest job of any account",
  });
}

const keyOf = (job: Pick<LoadJobRecord, "_id" | "account_id">) => ({ _id: job._id, account_id: job.account_id });

/** Claims the oldest claimable job of an account not in `exclude`, but no writer of a source a writer runs on. */
function claimOldest(
  jobs: Model<LoadJobRecord>,
  owner: string,
  leaseMs: number,
  kinds: JobKind[],
  exclude: number[],
  writing: Pick<LoadJobRecord, "account_id" | "knowledge_source_id">[],
  now: Date,
): Promise<LoadJobRecord | null> {
  const filter = {
    kind: { $in: kinds },
    ...(exclude.length ? { account_id: { $nin: exclude } } : {}),
    ...(writing.length ? { $nor: writing.map((w) => ({ account_id: w.account_id, knowledge_source_id: w.knowledge_source_id, kind: { $in: WRITERS } })) } : {}),
  };
  return jobQueue(jobs).claim(owner, leaseMs, { filter, sort: { queued_at: 1 }, now });
}

/** Extends the lease while the owner still holds it; false means another loader took the job over. */
export function renewLease(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string, leaseMs: number): Promise<boolean> {
  return jobQueue(jobs).renew(keyOf(job), owner, leaseMs);
}

/** Records progress (only while the owner still holds the lease). */
export function saveProgress(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string, progress: object): Promise<boolean> {
  return jobQueue(jobs).write(keyOf(job), owner, { progress });
}

/** Ends a job as done or failed (only while the owner still holds the lease). */
export function finishJob(
  jobs: Model<LoadJobRecord>,
  job: Pick<LoadJobRecord, "_id" | "account_id">,
  owner: string,
  outcome: { status: "done" | "failed"; error?: string | null },
): Promise<boolean> {
  return jobQueue(jobs).complete(keyOf(job), owner, { set: { status: outcome.status, error: outcome.error ?? null } });
}

/**
 * Re-queues a load job as its own continuation (next window, saved progress) in one atomic write, so a
 * crash can neither lose the continuation nor leave two jobs for one source. It goes to the back of the queue.
 */
export function continueJob(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id" | "window">, owner: string, progress: object): Promise<boolean> {
  return jobQueue(jobs).release(keyOf(job), owner, { set: { window: job.window + 1, progress, queued_at: new Date() } });
}

/** Gives a job back to the queue at once (graceful shutdown), keeping its progress. */
export async function releaseJob(jobs: Model<LoadJobRecord>, job: Pick<LoadJobRecord, "_id" | "account_id">, owner: string): Promise<void> {
  await jobQueue(jobs).release(keyOf(job), owner);
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

/**
 * True while an earlier writer of the same source (WRITERS) runs (its lease alive). claimJob passes over the
 * writers of a busy source; two loaders claiming at one moment may still both start one, and then the later job
 * waits. Re-chunks of one source so run one at a time, oldest first: the last chunking change is the last applied.
 */
export async function earlierWriterRunning(jobs: Model<LoadJobRecord>, job: LoadJobRecord): Promise<boolean> {
  const earlier = await jobs.exists({
    kind: { $in: WRITERS },
    account_id: job.account_id,
    knowledge_source_id: job.knowledge_source_id,
    status: "running",
    lease_expires_at: { $gte: new Date() },
    _id: { $ne: job._id },
    created_at: { $lt: job.created_at },
  });
  return earlier !== null;
}
