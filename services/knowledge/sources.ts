import type { Model } from "mongoose";
import type { KnowledgeSourceRecord, LoadJobRecord, RechunkStatus } from "./model";
import type { SourceChanges } from "./states";

/*
 * The knowledge loader's reads and writes of knowledge_sources (the knowledge service owns the collection;
 * docs/adr/0022-layout-one-writer-tenancy-guard.md, "One writer per collection"): the source a job works on, its loading state, its removal.
 */

const sourceOf = (job: LoadJobRecord) => ({ _id: job.knowledge_source_id, account_id: job.account_id });

/** The source a job works on, or null once it is deleted. */
export function jobSource(sources: Model<KnowledgeSourceRecord>, job: LoadJobRecord): Promise<KnowledgeSourceRecord | null> {
  return sources.findOne(sourceOf(job)).lean<KnowledgeSourceRecord>();
}

/** Sets loading fields (progress, outcome, counts) of a job's source. */
export async function setLoadingState(sources: Model<KnowledgeSourceRecord>, job: LoadJobRecord, changes: SourceChanges): Promise<void> {
  await sources.updateOne(sourceOf(job), { $set: changes });
}

/**
 * Sets a running load's progress on its source; false, with nothing set, once the source is gone or its deletion
 * is queued (the load then stops: what it indexed after the deletion's purge would outlive the source).
 */
export async function setLoadProgress(sources: Model<KnowledgeSourceRecord>, job: LoadJobRecord, changes: SourceChanges): Promise<boolean> {
  return (await sources.updateOne({ ...sourceOf(job), deleting: { $ne: true } }, { $set: changes })).matchedCount > 0;
}

/** Removes a job's source record: the last step of its deletion. */
export async function removeSourceRecord(sources: Model<KnowledgeSourceRecord>, job: LoadJobRecord): Promise<void> {
  await sources.deleteOne(sourceOf(job));
}

/**
 * Sets where a re-chunk job stands on its source, while the source's `rechunk` still names this job (a later
 * chunking change has queued a successor, whose state it is then).
 */
export async function setRechunkState(
  sources: Model<KnowledgeSourceRecord>,
  job: LoadJobRecord,
  state: { status: RechunkStatus; documents_done?: number; documents_total?: number | null; finished_at?: Date | null; error?: string | null },
): Promise<void> {
  const set = Object.fromEntries(Object.entries(state).map(([key, value]) => [`rechunk.${key}`, value]));
  await sources.updateOne({ ...sourceOf(job), "rechunk.job_id": job._id }, { $set: set });
}
