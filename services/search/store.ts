import type { Logger } from "moleculer";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import type { EmbeddedEngine } from "../../lib/search/embedded-engine";
import type { IndexedChunk, SearchIndex } from "../../lib/search/port";
import { bufferToVector } from "../../lib/search/vectors";
import { isDuplicateKeyError } from "../../lib/errors";
import type { EmbedJob, EmbedStage } from "./embed-stage";
import type { IndexGenerations } from "./generations";
import type { ChunkRecord, DocumentRecord, SearchModels } from "./model";
import { contentHash, documentIdFor, embedText, indexKey, planChunks } from "./rules";

/** Writes per round trip when removing chunks by id (by _id each: the one query every backend serves fast). */
const DELETE_CONCURRENCY = 50;
/** Chunks read per batch when refilling the embedded engine from MongoDB. */
const REBUILD_BATCH = 1000;

/** What the store works with; the search service builds it once at start. */
export interface StoreDeps {
  models: SearchModels;
  index: SearchIndex;
  stage?: EmbedStage;
  provider?: EmbeddingProvider;
  /** Write generations per account (what snapshots of the embedded index are checked against). */
  generations?: IndexGenerations;
  logger: Logger;
}

/** Runs a batch of an account's chunk writes under its write generation (see IndexGenerations). */
export function tracked<T>(
  deps: Pick<StoreDeps, "generations">,
  accounts: number | number[],
  batch: () => Promise<T>,
  options?: { resumable?: boolean },
): Promise<T> {
  return deps.generations ? deps.generations.write(accounts, batch, options) : batch();
}

export interface IncomingDocument {
  url: string;
  title?: string;
  content: string;
  metadata?: Record<string, unknown>;
}

export interface IndexCounts {
  received: number;
  indexed: number;
  unchanged: number;
  chunks: number;
  /** Chunks whose vector came from the embedding cache at once. */
  cached_vectors: number;
  /** Chunks queued for the embedding stage (keyword-searchable already). */
  queued_for_embedding: number;
  document_ids: string[];
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

function toIndexed(c: ChunkRecord, vector: Float32Array | null): IndexedChunk {
  return {
    id: c._id,
    accountId: c.account_id,
    sourceId: c.source_id,
    documentId: c.document_id,
    position: c.position,
    title: c.title,
    url: c.url,
    content: c.content,
    vector,
    indexedAt: c.indexed_at.getTime(),
  };
}

/**
 * A chunk that is already stored has the same document, position and text (its id hashes them), but the
 * document's title, which is part of the embedded text, may have changed: then the stored chunk takes the
 * new title and embedding key, and the new vector (from the cache) or none (it is queued). Otherwise it
 * keeps its vector. Returns the vector the chunk now has.
 */
async function keepStoredChunk(models: SearchModels, r: ChunkRecord): Promise<ChunkRecord["vector"]> {
  const stored = await models.chunks.findById(r._id, { embed_key: 1, title: 1, url: 1, vector: 1 }).lean<ChunkRecord>();
  if (stored && stored.embed_key === r.embed_key && stored.title === r.title && stored.url === r.url) {
    if (r.vector && !stored.vector) await models.chunks.updateOne({ _id: r._id }, { $set: { vector: r.vector } });
    return r.vector ?? stored.vector;
  }
  await models.chunks.updateOne({ _id: r._id }, { $set: { title: r.title, url: r.url, embed_key: r.embed_key, vector: r.vector, indexed_at: r.indexed_at } });
  return r.vector;
}

/**
 * Upserts one document: unchanged (same index key, fully indexed) is skipped; otherwise its chunks are
 * written to MongoDB and the index at once (keyword-searchable), vectors come from the cache or are
 * queued for the embedding stage. The document is marked pending first, so a crash half-way makes the
 * next load redo it rather than skip it.
 */
async function indexOne(
  deps: StoreDeps,
  accountId: number,
  sourceId: number,
  input: IncomingDocument,
  chunkSize: number,
  overlap: number,
  counts: IndexCounts,
  jobs: EmbedJob[],
) {
  const { models, index } = deps;
  const id = documentIdFor(accountId, sourceId, input.url);
  counts.document_ids.push(id);
  const title = (input.title ?? "").trim() || input.url;
  const hash = contentHash(input.content);
  const key = indexKey({ title, url: input.url, contentHash: hash, chunkSize, overlap });
  const existing = await models.documents.findById(id).lean<DocumentRecord>();
  if (existing && existing.account_id !== accountId) throw new Error(`document id collision for ${id}`);
  if (existing && existing.index_key === key && existing.index_state === "indexed" && !existing.deletion_job_id) {
    counts.unchanged++;
    return;
  }
  const model = deps.provider?.model ?? "none";
  const planned = planChunks({ id, title, content: input.content }, chunkSize, overlap, model);
  const fresh = new Set(planned.map((c) => c.id));
  const stale = (existing?.chunk_ids ?? []).filter((c) => !fresh.has(c));
  await tracked(deps, accountId, async () => {
    const now = new Date();
    await models.documents.updateOne(
      { _id: id },
      {
        $set: {
          account_id: accountId,
          source_id: sourceId,
          url: input.url,
          title,
          content: input.content,
          content_hash: hash,
          metadata: input.metadata ?? {},
          // The previous chunks stay listed until they are deleted, so a crash in between leaves no orphans.
          chunk_ids: [...fresh, ...stale],
          chunk_size: chunkSize,
          chunk_overlap: overlap,
          index_key: key,
          index_state: "pending",
          indexed_at: now,
          deletion_job_id: null,
        },
        $setOnInsert: { created_at: now },
      },
      { upsert: true, timestamps: true },
    );

    const cached = deps.provider ? await Promise.all(planned.map((c) => models.embeddings.findById(c.embedKey).lean())) : [];
    const records: ChunkRecord[] = planned.map((c, i) => ({
      _id: c.id,
      account_id: accountId,
      source_id: sourceId,
      document_id: id,
      position: c.position,
      title,
      url: input.url,
      content: c.content,
      embed_key: c.embedKey,
      vector: cached[i]?.vector ?? null,
      indexed_at: now,
    }));
    const vectors: (ChunkRecord["vector"] | undefined)[] = new Array(records.length);
    await inBatches(
      records.map((r, i) => [r, i] as const),
      DELETE_CONCURRENCY,
      async ([r, i]) => {
        try {
          await models.chunks.create(r);
          vectors[i] = r.vector;
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
          vectors[i] = await keepStoredChunk(models, r);
        }
      },
    );
    const indexed = records.map((r, i) => {
      const vector = vectors[i] ?? null;
      return toIndexed({ ...r, vector }, vector ? bufferToVector(vector) : null);
    });
    await index.upsertChunks(indexed);
    if (stale.length) {
      await index.deleteChunks(accountId, stale);
      await inBatches(stale, DELETE_CONCURRENCY, (c) => Promise.all([models.chunks.deleteOne({ _id: c }), models.pending.deleteOne({ _id: c })]));
    }
    const waiting = indexed.filter((c) => !c.vector);
    counts.cached_vectors += indexed.length - waiting.length;
    if (deps.stage && waiting.length) {
      await inBatches(waiting, DELETE_CONCURRENCY, async (c) => {
        try {
          await models.pending.create({ _id: c.id, account_id: accountId });
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
        }
      });
      for (const c of waiting) {
        jobs.push({ accountId, chunkId: c.id, embedKey: records.find((r) => r._id === c.id)!.embed_key, text: embedText(title, c.content) });
      }
      counts.queued_for_embedding += waiting.length;
    }
  });
  counts.chunks += planned.length;
  counts.indexed++;
  await models.documents.updateOne({ _id: id }, { $set: { index_state: "indexed", chunk_ids: [...fresh] } });
}

/** search.indexDocuments: upserts a window of documents of one source and returns what happened. */
export async function indexDocuments(
  deps: StoreDeps,
  p: { accountId: number; sourceId: number; documents: IncomingDocument[]; chunkSize: number; overlap: number },
): Promise<IndexCounts> {
  const counts: IndexCounts = {
    received: p.documents.length,
    indexed: 0,
    unchanged: 0,
    chunks: 0,
    cached_vectors: 0,
    queued_for_embedding: 0,
    document_ids: [],
  };
  const jobs: EmbedJob[] = [];
  // The same url twice in one window is one document: the last copy wins.
  const byUrl = new Map(p.documents.map((d) => [d.url, d]));
  for (const doc of byUrl.values()) await indexOne(deps, p.accountId, p.sourceId, doc, p.chunkSize, p.overlap, counts, jobs);
  deps.stage?.enqueue(jobs);
  return counts;
}

/** Removes one document everywhere: index first (it stops matching), then chunks, then the record. */
export async function removeDocument(deps: StoreDeps, doc: Pick<DocumentRecord, "_id" | "account_id" | "chunk_ids">) {
  const { models, index } = deps;
  // Resumable: a failed deletion keeps its queue entry and is finished at the next start.
  await tracked(
    deps,
    doc.account_id,
    async () => {
      await index.deleteChunks(doc.account_id, doc.chunk_ids);
      await inBatches(doc.chunk_ids, DELETE_CONCURRENCY, (c) =>
        Promise.all([models.chunks.deleteOne({ _id: c, account_id: doc.account_id }), models.pending.deleteOne({ _id: c })]),
      );
    },
    { resumable: true },
  );
  await models.documents.deleteOne({ _id: doc._id, account_id: doc.account_id });
}

/** search.deleteSourceDocuments: every document of one source of one account. */
export async function removeSource(deps: StoreDeps, accountId: number, sourceId: number) {
  const { models, index } = deps;
  return tracked(deps, accountId, async () => {
    await index.deleteSource(accountId, sourceId);
    const chunks = await models.chunks.find({ account_id: accountId, source_id: sourceId }, { _id: 1 }).lean();
    await inBatches(chunks, DELETE_CONCURRENCY, (c) => models.pending.deleteOne({ _id: c._id }));
    const [docs, removed] = await Promise.all([
      models.documents.deleteMany({ account_id: accountId, source_id: sourceId }),
      models.chunks.deleteMany({ account_id: accountId, source_id: sourceId }),
    ]);
    return { deleted_documents: docs.deletedCount, deleted_chunks: removed.deletedCount };
  });
}

/**
 * Refills the embedded engine from MongoDB (the durable copy): every account, or only the given ones (one
 * read of search_chunks for all of them). Returns the chunk count and the accounts seen.
 */
export async function rebuildEmbedded(
  deps: Pick<StoreDeps, "models">,
  engine: EmbeddedEngine,
  accounts?: number[],
): Promise<{ chunks: number; accounts: Set<number> }> {
  const seen = new Set<number>();
  if (accounts && !accounts.length) return { chunks: 0, accounts: seen };
  let n = 0;
  let batch: IndexedChunk[] = [];
  const filter = accounts ? { account_id: accounts.length === 1 ? accounts[0]! : { $in: accounts } } : {};
  const cursor = deps.models.chunks.find(filter).lean<ChunkRecord[]>().cursor({ batchSize: REBUILD_BATCH });
  for await (const c of cursor as AsyncIterable<ChunkRecord>) {
    seen.add(c.account_id);
    batch.push(toIndexed(c, c.vector ? bufferToVector(c.vector) : null));
    if (batch.length >= REBUILD_BATCH) {
      engine.load(batch);
      n += batch.length;
      batch = [];
    }
  }
  engine.load(batch);
  return { chunks: n + batch.length, accounts: seen };
}
