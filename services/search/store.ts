import type { Logger } from "moleculer";
import { insertNew } from "../../lib/db";
import { encodeFreeJson } from "../../lib/free-json";
import type { ChunkingSettings } from "../../lib/search/chunking";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import type { LocalIndex } from "../../lib/search/engines";
import type { IndexedChunk, SearchIndex } from "../../lib/search/port";
import { bufferToVector } from "../../lib/search/vectors";
import type { EmbedJob, EmbedStage } from "./embed-stage";
import type { IndexGenerations } from "./generations";
import type { ChunkRecord, DocumentRecord, SearchModels } from "./model";
import { contentHash, documentIdFor, documentSummary, embedText, indexKey, planChunks, type PlannedChunk } from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";
import { toWellFormed } from "../../lib/text";

/** Ids per delete command when removing documents and their chunks. */
const KEYS_PER_COMMAND = 1000;
/** Documents planned at once (a read each): a loader window's worth; a re-chunk's switch plans a whole source in slices. */
const PLAN_CONCURRENCY = 500;
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
  /** Offsets into content where a heading begins, as the reader saw them (markup is not kept in content). */
  sections?: number[];
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

export function toIndexed(c: ChunkRecord, vector: Float32Array | null, metadata: Record<string, unknown> | null): IndexedChunk {
  return {
    id: c._id,
    accountId: c.account_id,
    sourceId: c.source_id,
    documentId: c.document_id,
    position: c.position,
    title: c.title,
    url: c.url,
    content: c.content,
    chunkStart: c.chunk_start ?? null,
    chunkEnd: c.chunk_end ?? null,
    vector,
    indexedAt: c.indexed_at.getTime(),
    metadata,
  };
}

/**
 * The metadata of the documents these chunks belong to (what filters compare; chunk records do not repeat it):
 * one read per batch, by _id. Chunks of a document that is gone get none.
 */
export async function documentMetadata(models: SearchModels, chunks: Pick<ChunkRecord, "document_id">[]): Promise<Map<string, Record<string, unknown>>> {
  const ids = [...new Set(chunks.map((c) => c.document_id))];
  if (!ids.length) return new Map();
  const docs = await crossAccount("documents of chunks read by account already (rebuild, model switch)", models.documents.find({ _id: { $in: ids } }, { metadata: 1 }))
    .lean<Pick<DocumentRecord, "_id" | "metadata">[]>();
  return new Map(docs.map((d) => [d._id, d.metadata ?? {}]));
}

/**
 * A chunk that is already stored has the same document, position and text (its id hashes them), but the
 * document's title, which is part of the embedded text, may have changed: then the stored chunk takes the
 * new title and embedding key, and the new vector (from the cache) or none (it is queued). Otherwise it
 * keeps its vector. Returns the vector the chunk now has.
 */
async function keepStoredChunk(models: SearchModels, r: ChunkRecord): Promise<ChunkRecord["vector"]> {
  const stored = await models.chunks.findById(r._id, { embed_key: 1, title: 1, url: 1, vector: 1, chunk_start: 1, chunk_end: 1 }).lean<ChunkRecord>();
  // The same text at the same position may sit elsewhere in the document's content (blank space changed before it).
  const range = { chunk_start: r.chunk_start, chunk_end: r.chunk_end };
  if (stored && stored.embed_key === r.embed_key && stored.title === r.title && stored.url === r.url) {
    const moved = stored.chunk_start !== r.chunk_start || stored.chunk_end !== r.chunk_end;
    if ((r.vector && !stored.vector) || moved) await models.chunks.updateOne({ _id: r._id }, { $set: { ...range, ...(r.vector && !stored.vector ? { vector: r.vector } : {}) } });
    return r.vector ?? stored.vector;
  }
  await models.chunks.updateOne({ _id: r._id }, { $set: { title: r.title, url: r.url, embed_key: r.embed_key, vector: r.vector, indexed_at: r.indexed_at, ...range } });
  return r.vector;
}

/** The cached vector of each embedding key (in their order), read a command per slice (a whole source's chunks when it is re-chunked). */
export async function cachedVectors(models: SearchModels, keys: string[]): Promise<({ vector: Buffer } | undefined)[]> {
  const found = new Map<string, Buffer>();
  await byKeys([...new Set(keys)], async (slice) => {
    for (const e of await models.embeddings.find({ _id: { $in: slice } }).lean()) found.set(e._id, e.vector);
  });
  return keys.map((k) => (found.has(k) ? { vector: found.get(k)! } : undefined));
}

/** One incoming document that needs (re)indexing, with the chunks it is cut into. */
interface PlannedDocument {
  id: string;
  input: IncomingDocument;
  title: string;
  hash: string;
  key: string;
  chunks: PlannedChunk[];
  /** Chunks of the previous version that the new one no longer has. */
  stale: string[];
  exists: boolean;
}

/**
 * Decides what a document needs: nothing (same index key, fully indexed) or its chunks (re)written. A
 * document of another account with the same id is a hash collision and fails the batch.
 */
async function planDocument(deps: StoreDeps, accountId: number, sourceId: number, input: IncomingDocument, chunking: ChunkingSettings) {
  const id = documentIdFor(accountId, sourceId, input.url);
  const title = (input.title ?? "").trim() || input.url;
  const hash = contentHash(input.content);
  const key = indexKey({ title, url: input.url, contentHash: hash, chunking, sections: input.sections });
  // By id alone, so a (never seen) id collision across accounts is detected rather than overwritten.
  const existing = await crossAccount("a document id derived from its account; collisions are checked next", deps.models.documents
    .findById(id, { account_id: 1, index_key: 1, index_state: 1, deletion_job_id: 1, chunk_ids: 1, metadata: 1, sections: 1 }))
    .lean<DocumentRecord>();
  if (existing && existing.account_id !== accountId) throw new Error(`document id collision for ${id}`);
  if (existing && existing.index_key === key && existing.index_state === "indexed" && !existing.deletion_job_id) {
    // Metadata is not part of the index key (no chunk changes with it): a new one is written on its own.
    if (input.metadata && JSON.stringify(input.metadata) !== JSON.stringify(existing.metadata ?? {})) {
      const metadata = input.metadata;
      await tracked(deps, accountId, async () => {
        await deps.models.documents.updateOne({ _id: id, account_id: accountId }, { $set: { metadata } });
        await deps.index.setDocumentMetadata(accountId, id, existing.chunk_ids, metadata);
      });
    }
    // Section marks count for the heading strategy only: kept for a later change of chunking.
    if (input.sections && JSON.stringify(input.sections) !== JSON.stringify(existing.sections ?? [])) {
      await deps.models.documents.updateOne({ _id: id, account_id: accountId }, { $set: { sections: input.sections } });
    }
    return { id, plan: null };
  }
  const chunks = planChunks({ id, title, content: input.content, sections: input.sections }, chunking, deps.provider?.model ?? "none");
  const fresh = new Set(chunks.map((c) => c.id));
  const stale = (existing?.chunk_ids ?? []).filter((c) => !fresh.has(c));
  return { id, plan: { id, input, title, hash, key, chunks, stale, exists: Boolean(existing) } satisfies PlannedDocument };
}

/**
 * Writes the chunks of a batch of documents to MongoDB and the index at once (keyword-searchable); vectors
 * come from the cache or are queued for the embedding stage. Each write is one command for the whole batch.
 * A document already stored is marked pending first, so a crash half-way makes the next load redo it rather
 * than skip it; a new one is written once, last, so until then there is nothing to skip.
 */
async function writeDocuments(deps: StoreDeps, accountId: number, sourceId: number, docs: PlannedDocument[], chunking: ChunkingSettings, counts: IndexCounts, jobs: EmbedJob[]) {
  const { models, index } = deps;
  await tracked(deps, accountId, async () => {
    const now = new Date();
    const fields = (d: PlannedDocument) => ({
      account_id: accountId,
      source_id: sourceId,
      url: d.input.url,
      title: d.title,
      content: d.input.content,
      content_hash: d.hash,
      // Free-form (any keys, nested arrays): stored as JSON text, as the model declares; this write skips mongoose.
      metadata: encodeFreeJson(d.input.metadata ?? {}),
      sections: d.input.sections ?? [],
      // The previous chunks stay listed until they are deleted, so a crash in between leaves no orphans.
      chunk_ids: [...d.chunks.map((c) => c.id), ...d.stale],
      chunk_size: chunking.size,
      chunk_overlap: chunking.overlap,
      index_key: d.key,
      index_state: "pending",
      indexed_at: now,
      deletion_job_id: null,
      updated_at: now,
    });
    const stored = docs.filter((d) => d.exists);
    if (stored.length) {
      await models.documents.collection.bulkWrite(
        stored.map((d) => ({ updateOne: { filter: { _id: d.id }, update: { $set: fields(d) } } })) as never,
        { ordered: false },
      );
    }

    const planned = docs.flatMap((d) => d.chunks.map((c) => ({ doc: d, chunk: c })));
    const cached = deps.provider ? await cachedVectors(models, planned.map(({ chunk }) => chunk.embedKey)) : [];
    const records: ChunkRecord[] = planned.map(({ doc, chunk }, i) => ({
      _id: chunk.id,
      account_id: accountId,
      source_id: sourceId,
      document_id: doc.id,
      position: chunk.position,
      title: doc.title,
      url: doc.input.url,
      content: chunk.content,
      chunk_start: chunk.start,
      chunk_end: chunk.end,
      embed_key: chunk.embedKey,
      vector: cached[i]?.vector ?? null,
      indexed_at: now,
    }));
    const vectors = records.map((r) => r.vector);
    // A chunk that exists already (same document, position and text) keeps what it has, title aside.
    for (const i of await insertNew(models.chunks.collection, records)) vectors[i] = await keepStoredChunk(models, records[i]!);
    const indexed = records.map((r, i) =>
      toIndexed({ ...r, vector: vectors[i] ?? null }, vectors[i] ? bufferToVector(vectors[i]!) : null, planned[i]!.doc.input.metadata ?? {}),
    );
    // Changed documents swap versions in one index change: searchers never see a page with no chunks or two versions.
    const stale = docs.flatMap((d) => d.stale);
    await index.replaceChunks(accountId, indexed, stale);
    if (stale.length) {
      await byKeys(stale, (ids) => Promise.all([models.chunks.deleteMany({ _id: { $in: ids }, account_id: accountId }), models.pending.deleteMany({ _id: { $in: ids } })]));
    }
    const waiting = indexed.map((c, i) => ({ c, r: records[i]!, title: planned[i]!.doc.title })).filter(({ c }) => !c.vector);
    counts.cached_vectors += indexed.length - waiting.length;
    if (deps.stage && waiting.length) {
      await insertNew(models.pending.collection, waiting.map(({ c }) => ({ _id: c.id, account_id: accountId, created_at: now })));
      for (const { c, r, title } of waiting) jobs.push({ accountId, chunkId: c.id, embedKey: r.embed_key, text: embedText(title, c.content) });
      counts.queued_for_embedding += waiting.length;
    }
    counts.chunks += records.length;
    await models.documents.collection.bulkWrite(
      docs.map((d) => {
        const indexed = { index_state: "indexed", chunk_ids: d.chunks.map((c) => c.id) };
        return d.exists
          ? { updateOne: { filter: { _id: d.id }, update: { $set: indexed } } }
          : { insertOne: { document: { _id: d.id, ...fields(d), ...indexed, created_at: now } } };
      }) as never,
      { ordered: false },
    );
  });
  counts.indexed += docs.length;
}

/** search.indexDocuments: upserts a window of documents of one source and returns what happened. */
export async function indexDocuments(
  deps: StoreDeps,
  p: { accountId: number; sourceId: number; documents: IncomingDocument[]; chunking: ChunkingSettings },
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
  // The same url twice in one window is one document: the last copy wins. Half a surrogate pair (a wiki's JSON can
  // escape one) is stored as U+FFFD, as MongoDB's driver would write it; Typesense would refuse the chunk.
  const byUrl = new Map(p.documents.map((d) => [d.url, { ...d, content: toWellFormed(d.content), ...(d.title ? { title: toWellFormed(d.title) } : {}) }]));
  const inputs = [...byUrl.values()];
  const plans: Awaited<ReturnType<typeof planDocument>>[] = [];
  for (let i = 0; i < inputs.length; i += PLAN_CONCURRENCY) {
    plans.push(...(await Promise.all(inputs.slice(i, i + PLAN_CONCURRENCY).map((d) => planDocument(deps, p.accountId, p.sourceId, d, p.chunking)))));
  }
  counts.document_ids = plans.map((x) => x.id);
  const changed = plans.flatMap((x) => (x.plan ? [x.plan] : []));
  counts.unchanged = plans.length - changed.length;
  if (changed.length) await writeDocuments(deps, p.accountId, p.sourceId, changed, p.chunking, counts, jobs);
  deps.stage?.enqueue(jobs);
  return counts;
}

/** A page of documents (newest first) as listing items, and how many match. */
export async function documentPage(models: SearchModels, filter: Record<string, unknown>, skip: number, limit: number) {
  const [rows, total] = await Promise.all([
    models.documents.find(filter, { chunk_ids: 1, title: 1, url: 1, content: 1, source_id: 1, indexed_at: 1 })
      .sort({ indexed_at: -1, _id: 1 }).skip(skip).limit(limit).lean<DocumentRecord[]>(),
    models.documents.countDocuments(filter),
  ]);
  return { documents: rows.map(documentSummary), total };
}

/** Removes one document everywhere: index first (it stops matching), then chunks, then the record. */
export function removeDocument(deps: StoreDeps, doc: Pick<DocumentRecord, "_id" | "account_id" | "chunk_ids">): Promise<void> {
  return removeDocuments(deps, doc.account_id, [doc]);
}

/** Removes documents of one account everywhere, as one batch: index first (they stop matching), then chunks, then the records. */
async function removeDocuments(deps: StoreDeps, accountId: number, docs: Pick<DocumentRecord, "_id" | "chunk_ids">[]): Promise<void> {
  const { models, index } = deps;
  const chunkIds = docs.flatMap((d) => d.chunk_ids);
  // Resumable: a failed deletion keeps its queue entry (or its load job) and is finished later.
  await tracked(
    deps,
    accountId,
    async () => {
      await index.deleteChunks(accountId, chunkIds);
      await byKeys(chunkIds, (ids) =>
        Promise.all([models.chunks.deleteMany({ _id: { $in: ids }, account_id: accountId }), models.pending.deleteMany({ _id: { $in: ids } })]),
      );
    },
    { resumable: true },
  );
  await byKeys(docs.map((d) => d._id), (ids) => models.documents.deleteMany({ _id: { $in: ids }, account_id: accountId }));
}

/** Runs a command per slice of ids (an $in on _id is one indexed command on every backend). */
async function byKeys(ids: string[], fn: (slice: string[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < ids.length; i += KEYS_PER_COMMAND) await fn(ids.slice(i, i + KEYS_PER_COMMAND));
}

/** search.removeDocuments: a source's documents at these URLs (a refresh prunes pages gone from the site). */
export async function removeDocumentsAt(deps: StoreDeps, accountId: number, sourceId: number, urls: string[]): Promise<number> {
  const ids = [...new Set(urls.map((url) => documentIdFor(accountId, sourceId, url)))];
  const docs = await deps.models.documents.find({ _id: { $in: ids }, account_id: accountId }, { chunk_ids: 1 }).lean<DocumentRecord[]>();
  if (docs.length) await removeDocuments(deps, accountId, docs);
  return docs.length;
}

/** search.deleteSourceDocuments: every document of one source of one account. */
export async function removeSource(deps: StoreDeps, accountId: number, sourceId: number) {
  const { models, index } = deps;
  return tracked(deps, accountId, async () => {
    await index.deleteSource(accountId, sourceId);
    const chunks = await models.chunks.find({ account_id: accountId, source_id: sourceId }, { _id: 1 }).lean();
    await byKeys(chunks.map((c) => c._id), (ids) => models.pending.deleteMany({ _id: { $in: ids } }));
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
  deps: Pick<StoreDeps, "models" | "provider">,
  engine: LocalIndex,
  accounts?: number[],
): Promise<{ chunks: number; accounts: Set<number> }> {
  const seen = new Set<number>();
  if (accounts && !accounts.length) return { chunks: 0, accounts: seen };
  let n = 0;
  let batch: ChunkRecord[] = [];
  const load = async () => {
    const metadata = await documentMetadata(deps.models, batch);
    // A vector of another model (before a model switch finished) cannot be searched with this model's queries.
    const usable = (c: ChunkRecord) => c.vector && (!deps.provider || c.embed_key.startsWith(`${deps.provider.model}:`));
    engine.load(batch.map((c) => toIndexed(c, usable(c) ? bufferToVector(c.vector!) : null, metadata.get(c.document_id) ?? null)));
    n += batch.length;
    batch = [];
  };
  const filter = accounts ? { account_id: accounts.length === 1 ? accounts[0]! : { $in: accounts } } : {};
  const cursor = deps.models.chunks.find(filter).lean<ChunkRecord[]>().cursor({ batchSize: REBUILD_BATCH });
  for await (const c of cursor as AsyncIterable<ChunkRecord>) {
    seen.add(c.account_id);
    batch.push(c);
    if (batch.length >= REBUILD_BATCH) await load();
  }
  await load();
  return { chunks: n, accounts: seen };
}
