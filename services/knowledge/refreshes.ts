import type { Model } from "mongoose";
import { enqueueJob } from "./jobs";
import type { KnowledgeSourceRecord, LoadJobRecord } from "./model";
import { nextRefreshAt } from "./refresh";
import { DueQueue, modelStore } from "../../lib/lease-queue";

/** What the scheduler needs of a knowledge source whose refresh is due. */
export type DueRefresh = Pick<KnowledgeSourceRecord, "_id" | "account_id" | "refresh" | "next_refresh_at">;

/** Knowledge sources as a due queue of refreshes (lib/lease-queue.ts), listed across accounts like due schedules. */
function refreshQueue(sources: Model<KnowledgeSourceRecord>): DueQueue<KnowledgeSourceRecord> {
  return new DueQueue(modelStore(sources, { timestamps: false }), { due: "next_refresh_at", crossAccount: "the scheduler's due refreshes of every account" });
}

/** Sources whose refresh is due, most overdue first. */
export function dueRefreshes(sources: Model<KnowledgeSourceRecord>, now: Date, limit: number): Promise<DueRefresh[]> {
  return refreshQueue(sources).list(now, limit, { filter: { deleting: false }, projection: { account_id: 1, refresh: 1, next_refresh_at: 1 } });
}

/**
 * Claims a due refresh with one atomic update that matches only while next_refresh_at is what the replica read
 * (a policy edit recomputes it), as claimOccurrence does for schedules: of several replicas exactly one gets the
 * source back. The claim moves next_refresh_at past now, so an outage costs one refresh, not one per missed slot.
 */
export function claimRefresh(sources: Model<KnowledgeSourceRecord>, due: DueRefresh, now: Date): Promise<KnowledgeSourceRecord | null> {
  return refreshQueue(sources).claim({ _id: due._id, account_id: due.account_id }, due.next_refresh_at, nextRefreshAt(due.refresh, now), { match: { deleting: false } });
}

/**
 * Queues the claimed refresh as a normal load job (windows, leases, states), conditional (not forced). A load
 * already queued or running for the source stands for it: no second job.
 */
export function queueRefresh(jobs: Model<LoadJobRecord>, source: Pick<KnowledgeSourceRecord, "_id" | "account_id">) {
  return enqueueJob(jobs, { kind: "load", account_id: source.account_id, knowledge_source_id: source._id, force: false, trigger: "schedule" });
}
