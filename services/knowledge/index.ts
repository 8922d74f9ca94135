/*
 * The knowledge service's public face (docs/adr/0052-service-boundaries.md): the only file of services/knowledge/
 * another service may import. knowledge_sources and load_jobs have one writer, this service's code: the loader
 * and the scheduler change them only through the functions below, which work through the owner's models.
 */

/** The knowledge_sources and load_jobs collections: models (for reads and index registration) and types. */
export {
  knowledgeSourceModel,
  loadJobModel,
  type DataType,
  type KnowledgeSourceRecord,
  type LoadJobRecord,
} from "./model";
/** The load-job lease queue, as the loader works it: claim, renew, progress, continue, finish, release, cancel. */
export {
  cancelPendingLoads,
  claimJob,
  continueJob,
  earlierWriterRunning,
  finishJob,
  pendingJobs,
  releaseJob,
  renewLease,
  saveProgress,
} from "./jobs";
/** A job's source and its loading state, as the loader sets them. */
export { jobSource, removeSourceRecord, setLoadingState, setLoadProgress, setRechunkState } from "./sources";
/** The loading states a load moves a source through. */
export { loadOutcome, loadReport, loadStarted } from "./states";
/** Due refreshes, as the scheduler claims and queues them. */
export { claimRefresh, dueRefreshes, queueRefresh } from "./refreshes";
/** Params of the source list (GET /knowledge), declared once: the MCP server's sources tool reuses them. */
export { sourceListParams } from "./resource";
