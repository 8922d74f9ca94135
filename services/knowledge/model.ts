import { Schema, type Connection, type Model } from "mongoose";
import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { namedRecordSchema, recordSchemaOptions, type NamedRecord } from "../../lib/db";

export const DATA_TYPES = ["auto", "wiki", "website", "sitemap", "discovery", "pdf", "markdown", "text"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const LOADING_STATUSES = ["unloaded", "loading", "loaded", "partial", "failed"] as const;
export type LoadingStatus = (typeof LOADING_STATUSES)[number];

/** When a source reloads on its own: every `interval_seconds`, or on a cron `schedule` read in `timezone`. */
export interface RefreshPolicy {
  interval_seconds: number | null;
  cron: string | null;
  timezone: string;
  /** Remove pages gone from the listing or answering 404/410 twice in a row. */
  prune: boolean;
}

/** What a load did (the last one is shown on the source and its stats). */
export interface LoadReport {
  job_id: string;
  trigger: JobTrigger;
  status: "loaded" | "partial" | "failed";
  started_at: Date;
  finished_at: Date;
  duration_ms: number;
  new: number;
  changed: number;
  unchanged: number;
  removed: number;
  failed: number;
}

export interface KnowledgeSourceRecord extends NamedRecord {
  data_type: Exclude<DataType, "auto">;
  paths: string[];
  /** Encrypted credential for sources behind auth (wiki token); never serialised. */
  credentials: string | null;
  loading_status: LoadingStatus;
  loaded_at: Date | null;
  document_count: number;
  last_indexed_at: Date | null;
  loading_urls_total: number | null;
  loading_urls_done: number;
  loading_error: string | null;
  /** Set while a deletion job is queued; the record answers 200 until the job removes it. */
  deleting: boolean;
  refresh: RefreshPolicy | null;
  /** When the scheduler queues the next refresh; null without a policy. */
  next_refresh_at: Date | null;
  last_refresh: LoadReport | null;
}

const refreshSchema = new Schema<RefreshPolicy>(
  {
    interval_seconds: { type: Number, default: null },
    cron: { type: String, default: null },
    timezone: { type: String, default: "UTC" },
    prune: { type: Boolean, default: true },
  },
  { _id: false },
);

const reportSchema = new Schema<LoadReport>(
  {
    job_id: String,
    trigger: String,
    status: String,
    started_at: Date,
    finished_at: Date,
    duration_ms: Number,
    new: Number,
    changed: Number,
    unchanged: Number,
    removed: Number,
    failed: Number,
  },
  { _id: false },
);

const sourceSchema = namedRecordSchema<KnowledgeSourceRecord>(
  {
    data_type: { type: String, enum: DATA_TYPES, required: true },
    paths: { type: [String], default: [] },
    credentials: { type: String, default: null },
    loading_status: { type: String, enum: LOADING_STATUSES, default: "unloaded" },
    loaded_at: { type: Date, default: null },
    document_count: { type: Number, default: 0 },
    last_indexed_at: { type: Date, default: null },
    loading_urls_total: { type: Number, default: null },
    loading_urls_done: { type: Number, default: 0 },
    loading_error: { type: String, default: null },
    deleting: { type: Boolean, default: false },
    refresh: { type: refreshSchema, default: null },
    next_refresh_at: { type: Date, default: null },
    last_refresh: { type: reportSchema, default: null },
  },
  { hidden: ["credentials", "deleting"], collection: KNOWLEDGE_SOURCES_COLLECTION },
);
sourceSchema.index({ account_id: 1, loading_status: 1 });
// The scheduler's look for due refreshes, across accounts, oldest due first.
sourceSchema.index({ next_refresh_at: 1, _id: 1 });

/** The knowledge sources model on a given connection. */
export function knowledgeSourceModel(db: Connection): Model<KnowledgeSourceRecord> {
  return (db.models.KnowledgeSource as Model<KnowledgeSourceRecord>) ?? db.model<KnowledgeSourceRecord>("KnowledgeSource", sourceSchema);
}

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
