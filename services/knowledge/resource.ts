import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { defineResource } from "../../lib/resource";
import { DATA_TYPES, JOB_TRIGGERS, knowledgeSourceModel, LOADING_STATUSES } from "./model";
import { refreshParam } from "./refresh";

const int = { type: "number", integer: true } as const;
const nullable = <T extends string>(type: T) => ({ type, nullable: true }) as const;
const urlList = { type: "array", min: 1, max: 1000, items: { type: "url", max: 4096 } } as const;

/**
 * Knowledge sources. Name and description default to a label derived from the paths, the data type is resolved
 * from them ("auto"), and loading fields are the loader's; the credential is written only, and stored sealed.
 */
export const knowledgeSources = defineResource({
  name: "KnowledgeSource",
  label: "Knowledge source",
  collection: KNOWLEDGE_SOURCES_COLLECTION,
  model: knowledgeSourceModel,
  path: "/knowledge",
  idParam: "knowledge_source_id",
  identifier: true,
  event: "knowledge_source",
  fields: {
    name: { write: { type: "string", max: 255, trim: true, optional: true, nullable: true }, read: { type: "string" } },
    identifier: { read: { type: "string" } },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    data_type: { write: { type: "enum", values: DATA_TYPES, optional: true }, read: { type: "enum", values: DATA_TYPES.filter((t) => t !== "auto") } },
    paths: { write: urlList, read: { type: "array", items: { type: "string" } } },
    // Write-only credential for sources behind auth (a wiki's API token).
    auth_token: { write: { type: "string", min: 1, max: 4096, optional: true }, read: false },
    refresh: {
      write: refreshParam,
      read: { type: "object", nullable: true, props: { interval_seconds: nullable("number"), cron: nullable("string"), timezone: { type: "string" }, prune: { type: "boolean" } } },
    },
    loading_status: { read: { type: "enum", values: LOADING_STATUSES } },
    loaded_at: { read: nullable("date") },
    document_count: { read: int },
    last_indexed_at: { read: nullable("date") },
    loading_urls_total: { read: { ...int, nullable: true } },
    loading_urls_done: { read: int },
    loading_error: { read: nullable("string") },
    next_refresh_at: { read: nullable("date") },
    last_refresh: {
      read: {
        type: "object",
        nullable: true,
        props: {
          job_id: { type: "string" },
          trigger: { type: "enum", values: JOB_TRIGGERS },
          status: { type: "enum", values: ["loaded", "partial", "failed"] },
          started_at: { type: "date" },
          finished_at: { type: "date" },
          duration_ms: int,
          new: int,
          changed: int,
          unchanged: int,
          removed: int,
          failed: int,
        },
      },
    },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});
