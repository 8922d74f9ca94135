import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { crudActions, defineResource, type CrudHooks, type Rule } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { DATA_TYPES, JOB_TRIGGERS, LOADING_STATUSES, RECHUNK_STATUSES, type DataType } from "./model";
import { refreshParam } from "./refresh";
import { chunkingParam } from "../search";
import { CHUNKING_STRATEGIES } from "../../lib/search/chunking";

const RESOLVED_DATA_TYPES = DATA_TYPES.filter((t): t is Exclude<DataType, "auto"> => t !== "auto");
// Empty only for an upload source (the create and update check the rest: services/knowledge/knowledge.service.ts).
const urlList = { type: "array", min: 0, max: 1000, items: { type: "url", max: 4096 } } as const;

/** When a source reloads on its own: every `interval_seconds`, or on a cron `schedule` read in `timezone`. */
const refreshPolicy = stored.object(
  {
    interval_seconds: stored.number({ default: null }),
    cron: stored.string({ default: null }),
    timezone: stored.string({ default: "UTC" }),
    /** Remove pages gone from the listing or answering 404/410 twice in a row. */
    prune: stored.boolean({ default: true }),
  },
  { default: null },
);

/** What a load did (the last one is shown on the source and its stats). */
const loadReport = stored.object(
  {
    job_id: stored.string(),
    trigger: stored.string({ values: JOB_TRIGGERS }),
    status: stored.string({ values: ["loaded", "partial", "failed"] }),
    started_at: stored.date(),
    finished_at: stored.date(),
    duration_ms: stored.int(),
    new: stored.int(),
    changed: stored.int(),
    unchanged: stored.int(),
    removed: stored.int(),
    failed: stored.int(),
  },
  { default: null },
);

/** The source's own chunking (docs/adr/0059-chunking-per-source.md), complete; null: the deployment's default. */
const chunkingSettings = stored.object(
  { size: stored.int(), overlap: stored.int(), strategy: stored.string({ enum: CHUNKING_STRATEGIES, values: CHUNKING_STRATEGIES }) },
  { default: null },
);

/** The last re-chunk of the source's documents a chunking change queued; null before any. */
const rechunkState = stored.object(
  {
    status: stored.string({ values: RECHUNK_STATUSES }),
    job_id: stored.string(),
    queued_at: stored.date(),
    /** Documents whose new chunks are prepared (phase 1), of those the source held when the re-chunk began. */
    documents_done: stored.int({ default: 0 }),
    documents_total: stored.int({ default: null }),
    finished_at: stored.date({ default: null }),
    error: stored.string({ default: null }),
  },
  { default: null },
);

/**
 * Knowledge sources. Name and description default to a label derived from the paths, the data type is resolved
 * from them ("auto"), and loading fields are the loader's; the credential is written only, and stored sealed.
 */
export const knowledgeSources = defineResource({
  name: "KnowledgeSource",
  label: "Knowledge source",
  collection: KNOWLEDGE_SOURCES_COLLECTION,
  storage: {
    name: "KnowledgeSource",
    named: true,
    collection: KNOWLEDGE_SOURCES_COLLECTION,
    indexes: [
      [{ account_id: 1, loading_status: 1 }],
      // The scheduler's look for due refreshes, across accounts, oldest due first.
      [{ next_refresh_at: 1, _id: 1 }],
    ],
    // As records have held them since before the declaration listed `refresh` beside the other writable fields.
    order: [
      "data_type", "paths", "credentials", "loading_status", "loaded_at", "document_count", "last_indexed_at", "loading_urls_total",
      "loading_urls_done", "loading_error", "deleting", "refresh", "next_refresh_at", "last_refresh", "chunking", "rechunk",
    ],
  },
  path: "/knowledge",
  idParam: "knowledge_source_id",
  identifier: true,
  event: "knowledge_source",
  fields: {
    name: { write: { type: "string", max: 255, trim: true, optional: true, nullable: true }, read: { type: "string" } },
    identifier: { read: { type: "string" } },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    data_type: {
      write: { type: "enum", values: DATA_TYPES, optional: true },
      read: { type: "enum", values: RESOLVED_DATA_TYPES },
      // Never "auto" once stored: the create resolves it.
      store: stored.string({ enum: DATA_TYPES, values: RESOLVED_DATA_TYPES, required: true }),
    },
    paths: { write: urlList, read: { type: "array", items: { type: "string" } }, store: stored.strings() },
    // Write-only credential for sources behind auth (a wiki's API token), stored sealed as `credentials`.
    auth_token: { write: { type: "string", min: 1, max: 4096, optional: true }, read: false },
    credentials: { read: false, store: stored.string({ default: null }) },
    refresh: { write: refreshParam, read: refreshPolicy.rule, store: refreshPolicy },
    chunking: { write: chunkingParam, read: { ...chunkingSettings.rule, nullable: true, description: "The source's chunking; null: the deployment's default (fixed)" }, store: chunkingSettings },
    loading_status: { store: stored.string({ enum: LOADING_STATUSES, default: "unloaded" }) },
    loaded_at: { store: stored.date({ default: null }) },
    document_count: { store: stored.int({ default: 0 }) },
    last_indexed_at: { store: stored.date({ default: null }) },
    loading_urls_total: { store: stored.int({ default: null }) },
    loading_urls_done: { store: stored.int({ default: 0 }) },
    loading_error: { store: stored.string({ default: null }) },
    /** Set while a deletion job is queued; the record answers 200 until the job removes it. */
    deleting: { read: false, store: stored.boolean({ default: false }) },
    /** When the scheduler queues the next refresh; null without a policy. */
    next_refresh_at: { store: stored.date({ default: null }) },
    last_refresh: { store: loadReport },
    /**
     * Where the re-chunk of the stored documents after a chunking change stands: queued, running (searches answer
     * from the previous chunks), done (switched), failed (error; the previous chunks stay searchable).
     */
    rechunk: {
      read: {
        ...rechunkState.rule,
        nullable: true,
        description:
          "The re-chunk of the stored documents the last chunking change queued (null before any): queued, running (searches answer from the previous chunks; " +
          "documents_done of documents_total have their new chunks prepared), " +
          "done (the source switched to the new chunks at once), failed (error says why; the previous chunks stay searchable; give chunking again to retry)",
      },
      store: rechunkState,
    },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});

/** The knowledge sources model on a given connection. */
export const knowledgeSourceModel = knowledgeSources.model;
export type KnowledgeSourceRecord = typeof knowledgeSources.types.record;
export type RefreshPolicy = NonNullable<KnowledgeSourceRecord["refresh"]>;
export type LoadReport = NonNullable<KnowledgeSourceRecord["last_refresh"]>;

/** The list's one filter: GET /knowledge?status= keeps the sources in that loading status. */
export const sourceListFilters: NonNullable<CrudHooks["filters"]> = {
  params: { status: { type: "enum", values: LOADING_STATUSES, optional: true, description: "Only sources in this loading status" } },
  filter: ({ status }) => (status ? { loading_status: status } : {}),
};

/** Params of GET /knowledge (sort, paging, status), as its action declares them; the MCP sources tool reuses them. */
export const sourceListParams = (crudActions(knowledgeSources, { actions: ["list"], filters: sourceListFilters }).list as { params: Record<string, Rule> }).params;
