import { Schema, type Connection, type Model } from "mongoose";
import { recordSchemaOptions } from "../../lib/db";

export const DATA_TYPES = ["auto", "wiki", "website", "sitemap", "discovery", "pdf", "markdown", "text"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const LOADING_STATUSES = ["unloaded", "loading", "loaded", "partial", "failed"] as const;
export type LoadingStatus = (typeof LOADING_STATUSES)[number];

export const JOB_KINDS = ["load", "delete-source", "delete-document"] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ["pending", "running", "done", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** Who queued a load: a client (create, preload) or the refresh schedule. */
export const JOB_TRIGGERS = ["manual", "schedule"] as const;
export type JobTrigger = (typeof JOB_TRIGGERS)[number];

/**
 * Background work as documents: loaders claim pending jobs with a lease they keep renewing; a job whose
 * lease ran out (its loader died) is claimed again and resumes from `progress`. KEDA's MongoDB scaler
 * counts `{status: "pending"}` to scale loaders.
 */
export interface LoadJobRecord {
  _id: string;
  kind: JobKind;
  account_id: number;
  knowledge_source_id: number;
  document_id: string | null;
  status: JobStatus;
  force: boolean;
  trigger: JobTrigger;
  /** 1 for the first window of a load; continuations count up. */
  window: number;
  /** Where the load stands (page list or crawl frontier, and the next position); plain JSON. */
  progress: Record<string, unknown> | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  attempts: number;
  error: string | null;
  /** When the job (or its latest continuation) entered the queue: claims go oldest first. */
  queued_at: Date;
  created_at: Date;
  updated_at: Date;
}

const jobSchema = new Schema<LoadJobRecord>(
  {
    _id: { type: String, required: true },
    kind: { type: String, enum: JOB_KINDS, required: true },
    account_id: { type: Number, required: true },
    knowledge_source_id: { type: Number, required: true },
    document_id: { type: String, default: null },
    status: { type: String, enum: JOB_STATUSES, default: "pending" },
    force: { type: Boolean, default: false },
    trigger: { type: String, enum: JOB_TRIGGERS, default: "manual" },
    window: { type: Number, default: 1 },
    progress: { type: Schema.Types.Mixed, default: null },
    lease_owner: { type: String, default: null },
    lease_expires_at: { type: Date, default: null },
    attempts: { type: Number, default: 0 },
    error: { type: String, default: null },
    queued_at: { type: Date, default: () => new Date() },
  },
  { ...recordSchemaOptions<LoadJobRecord>(), collection: "load_jobs", minimize: false },
);
// Claiming: oldest pending first, or a running job whose lease expired.
jobSchema.index({ status: 1, queued_at: 1 });
jobSchema.index({ status: 1, lease_expires_at: 1 });
jobSchema.index({ account_id: 1, knowledge_source_id: 1, status: 1 });

/** The background jobs model on a given connection. */
export function loadJobModel(db: Connection): Model<LoadJobRecord> {
  return (db.models.LoadJob as Model<LoadJobRecord>) ?? db.model<LoadJobRecord>("LoadJob", jobSchema);
}

// A knowledge source's fields, storage included, are declared once in ./resource.ts; its model and record type
// derive from them. Exported last: ./resource.ts reads the values above while this module loads.
export { knowledgeSourceModel, type KnowledgeSourceRecord, type LoadReport, type RefreshPolicy } from "./resource";
