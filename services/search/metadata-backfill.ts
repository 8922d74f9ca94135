import type { Logger } from "moleculer";
import type { SearchIndex } from "../../lib/search/port";
import { crossAccount } from "../../lib/tenancy-guard";
import type { DocumentRecord, SearchModels } from "./model";

/** search_index_state `_id` of the record saying every document's metadata has reached the index (ADR 0058). */
export const METADATA_BACKFILL_MARKER = "metadata-in-index";
/** Documents read per page. */
const PAGE = 200;
/** Documents updated at once. */
const CONCURRENCY = 4;
/** Rounds of write-then-check for one document before a concurrent writer is left to finish it (it writes the index too). */
const MAX_ROUNDS = 3;

type Backfilled = Pick<DocumentRecord, "_id" | "account_id" | "chunk_ids" | "metadata">;
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});

/**
 * Puts one document's metadata into the index and checks it is still the stored one afterwards: a change written
 * meanwhile either was read here (and is written again) or writes the index itself after its own database write,
 * which comes after this check. So the index ends with the stored metadata either way.
 */
async function backfillDocument(models: SearchModels, index: SearchIndex, doc: Backfilled): Promise<void> {
  let current: Backfilled | null = doc;
  for (let round = 0; current && round < MAX_ROUNDS; round++) {
    await index.setDocumentMetadata(current.account_id, current._id, current.chunk_ids, current.metadata ?? {});
    const written: Backfilled = current;
    current = await models.documents.findOne({ _id: written._id, account_id: written.account_id }, { account_id: 1, chunk_ids: 1, metadata: 1 }).lean<Backfilled>();
    if (current && same(current.metadata, written.metadata) && same(current.chunk_ids, written.chunk_ids)) return;
  }
}

/**
 * Chunks an external index (Typesense) held before filters existed carry no metadata, so a filter would miss
 * them. Once per database, every document's metadata is written into the index, page by page in _id order; the
 * marker ends it, and a restart before the end starts over (each write is idempotent). The embedded engine needs
 * none: it is rebuilt from MongoDB, metadata joined, when its snapshot format changed.
 */
export async function backfillMetadata(deps: { models: SearchModels; index: SearchIndex; logger: Logger }, stopped: () => boolean = () => false): Promise<number> {
  const { models, index, logger } = deps;
  if (await models.state.exists({ _id: METADATA_BACKFILL_MARKER })) return 0;
  let done = 0;
  let after = "";
  for (;;) {
    if (stopped()) return done;
    const page = await crossAccount("start-up: every account's documents, once", models.documents.find({ _id: { $gt: after } }, { account_id: 1, chunk_ids: 1, metadata: 1 }))
      .sort({ _id: 1 })
      .limit(PAGE)
      .lean<Backfilled[]>();
    if (!page.length) break;
    for (let i = 0; i < page.length; i += CONCURRENCY) await Promise.all(page.slice(i, i + CONCURRENCY).map((d) => backfillDocument(models, index, d)));
    done += page.length;
    after = page[page.length - 1]!._id;
  }
  await models.state.updateOne({ _id: METADATA_BACKFILL_MARKER }, { $set: { updated_at: new Date() } }, { upsert: true });
  if (done) logger.info(`Search filters: metadata of ${done} documents written into the ${index.engine} index`);
  return done;
}
