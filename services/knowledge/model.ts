import { Schema } from "mongoose";
import { defineModel, stored } from "../../lib/storage";

/** `upload`: documents added by hand (POST /knowledge/{id}/documents), never loaded (docs/adr/0055-uploaded-documents.md). */
export const DATA_TYPES = ["auto", "wiki", "website", "sitemap", "discovery", "pdf", "markdown", "text", "upload"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const LOADING_STATUSES = ["unloaded", "loading", "loaded", "partial", "failed"] as const;
export type LoadingStatus = (typeof LOADING_STATUSES)[number];

/** `rechunk`: a source's stored documents cut again after its chunking changed (docs/adr/0059-chunking-per-source.md). */
export const JOB_KINDS = ["load", "delete-source", "delete-document", "rechunk"] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ["pending", "running", "done", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** Who queued a load: a client (create, preload) or the refresh schedule. */
export const JOB_TRIGGERS = ["manual", "schedule"] as const;
export type JobTrigger = (typeof JOB_TRIGGERS)[number];
export const RECHUNK_STATUSES = ["queued", "running", "done", "failed"] as const;
export type RechunkStatus = (typeof RECHUNK_STATUSES)[number];

/**
 * Background work as documents: loaders claim pending jobs with a lease they keep renewing; a job whose
 * lease ran out (its loader died) is claimed again and resumes from `progress`. KEDA's MongoDB scaler
 * counts `{status: "pending"}` to scale loaders.
 */
export const loadJobs = defineModel(
  {
    _id: { store: stored.string({ required: true }) },
    kind: { store: stored.string({ enum: JOB_KINDS, required: true }) },
    account_id: { store: stored.int({ required: true }) },
    knowledge_source_id: { store: stored.int({ required: true, ref: "knowledge_sources" }) },
    document_id: { store: stored.string({ default: null }) },
    status: { store: stored.string({ enum: JOB_STATUSES, default: "pending" }) },
    force: { store: stored.boolean({ default: false }) },
    trigger: { store: stored.string({ enum: JOB_TRIGGERS, default: "manual" }) },
    /** 1 for the first window of a load; continuations count up. */
    window: { store: stored.int({ default: 1 }) },
    /** Where the load stands (page list or crawl frontier, and the next position); plain JSON. */
    progress: { store: stored.custom<Record<string, unknown> | null>({ type: Schema.Types.Mixed, default: null }) },
    lease_owner: { store: stored.string({ default: null }) },
    lease_expires_at: { store: stored.date({ default: null }) },
    attempts: { store: stored.int({ default: 0 }) },
    error: { store: stored.string({ default: null }) },
    /** When the job (or its latest continuation) entered the queue: claims go oldest first. */
    queued_at: { store: stored.date({ default: () => new Date() }) },
  },
  {
    name: "LoadJob",
    keyed: true,
    collection: "load_jobs",
    minimize: false,
    indexes: [
      // Claiming: oldest pending first, or a running job whose lease expired.
      [{ status: 1, queued_at: 1 }],
      [{ status: 1, lease_expires_at: 1 }],
      [{ account_id: 1, knowledge_source_id: 1, status: 1 }],
    ],
  },
);
/** The background jobs model on a given connection. */
export const loadJobModel = loadJobs.model;
export type LoadJobRecord = typeof loadJobs.record;

// A knowledge source's fields, storage included, are declared once in ./resource.ts; its model and record type
// derive from them. Exported last: ./resource.ts reads the values above while this module loads.
export { knowledgeSourceModel, type KnowledgeSourceRecord, type LoadReport, type RefreshPolicy } from "./resource";
