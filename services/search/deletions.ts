import { randomUUID } from "node:crypto";
import { isDuplicateKeyError } from "../../lib/errors";
import { crossAccount } from "../../lib/tenancy-guard";
import { DELETION_QUEUE_MARKER } from "./generations";
import type { DocumentRecord } from "./model";
import { removeDocument, type StoreDeps } from "./store";

/**
 * Document deletions as queued jobs (decisions 11 and 19): DELETE queues the document in search_deletions,
 * marks it, and answers; the job removes index entries, chunks and the record in the background. Jobs left
 * by a stop or a crash are resumed at the next start.
 */
export class DeletionQueue {
  private readonly running = new Set<Promise<void>>();

  /** `removed` hears of each document a job removed (its source's document_count follows it). */
  constructor(
    private readonly deps: StoreDeps,
    private readonly removed: (doc: DocumentRecord) => void,
  ) {}

  /** Queues the document's deletion (once: a document already queued keeps its job) and returns the job id. */
  async queue(doc: DocumentRecord): Promise<string> {
    if (doc.deletion_job_id) return doc.deletion_job_id;
    const { deletions, documents } = this.deps.models;
    const jobId = randomUUID();
    // Queue first: a deletion is resumed at start from the queue, which is read by _id only.
    await deletions.updateOne(
      { _id: doc._id },
      { $setOnInsert: { account_id: doc.account_id, job_id: jobId, created_at: new Date() } },
      { upsert: true },
    );
    await documents.updateOne({ _id: doc._id, account_id: doc.account_id }, { $set: { deletion_job_id: jobId } });
    void this.run(doc);
    return jobId;
  }

  /** Deletions queued before a restart are finished now (the queue replaced a scan of search_documents). */
  async resume() {
    const { state, deletions, documents } = this.deps.models;
    if (!(await state.findById(DELETION_QUEUE_MARKER).lean())) {
      // Deletions queued by a version without the queue: found once by the old scan.
      const marked = await crossAccount("start-up: queued deletions of every account", documents.find({ deletion_job_id: { $ne: null } }, { account_id: 1, deletion_job_id: 1 })).lean<DocumentRecord[]>();
      for (const d of marked) {
        await deletions.updateOne({ _id: d._id }, { $setOnInsert: { account_id: d.account_id, job_id: d.deletion_job_id!, created_at: new Date() } }, { upsert: true });
      }
      try {
        await state.create({ _id: DELETION_QUEUE_MARKER });
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    }
    for (const queued of await deletions.find({}).lean()) {
      const doc = await documents.findOne({ _id: queued._id, account_id: queued.account_id }).lean<DocumentRecord>();
      // A document loaded again after its DELETE (deletion_job_id cleared) stays, as before the queue.
      if (doc?.deletion_job_id) void this.run(doc);
      else await deletions.deleteOne({ _id: queued._id });
    }
  }

  /** Resolves when the jobs under way have ended (at stop). */
  async drain() {
    await Promise.all([...this.running]);
  }

  private run(doc: DocumentRecord) {
    const job = removeDocument(this.deps, doc)
      .then(() => this.removed(doc))
      .then(() => this.deps.models.deletions.deleteOne({ _id: doc._id }))
      .then(() => undefined)
      .catch((err) => this.deps.logger.error(`Deleting document ${doc._id} failed; retried at next start`, err))
      .finally(() => this.running.delete(job));
    this.running.add(job);
    return job;
  }
}
