import { Schema, type Connection, type Model } from "mongoose";
import { defineModel, stored } from "../../lib/storage";
import { crossAccount } from "../../lib/tenancy-guard";
import type { StoredChunk } from "../../lib/search/port";

/** One page or file of a knowledge source, as the loader delivered it. Its id is stable per (account, source, url). */
const documents = defineModel(
  {
    _id: { store: stored.string({ required: true }) },
    account_id: { store: stored.int({ required: true }) },
    source_id: { store: stored.int({ required: true, ref: "knowledge_sources" }) },
    url: { store: stored.string({ required: true }) },
    title: { store: stored.string({ default: "" }) },
    content: { store: stored.string({ default: "" }) },
    content_hash: { store: stored.string({ required: true }) },
    metadata: { store: stored.json({ default: () => ({}) }) },
    chunk_ids: { read: false, store: stored.strings() },
    /** Offsets into content where the reader saw a heading begin (the `heading` chunking's section marks). */
    sections: { read: false, store: stored.ints() },
    chunk_size: { store: stored.int({ required: true }) },
    chunk_overlap: { read: false, store: stored.int({ required: true }) },
    /** Hash of everything that decides the chunks (content, title, url, chunking); equal means nothing to redo. */
    index_key: { read: false, store: stored.string({ required: true }) },
    /** "pending" while chunks are being written to the index; only "indexed" documents are skipped as unchanged. */
    index_state: { read: false, store: stored.string({ enum: ["pending", "indexed"], default: "pending" }) },
    indexed_at: { store: stored.date({ required: true }) },
    /** Set when a deletion is queued; the document answers 200 until the job has removed it. */
    deletion_job_id: { store: stored.string({ default: null }) },
  },
  {
    name: "SearchDocument",
    keyed: true,
    collection: "search_documents",
    minimize: false,
    // Listings filter by account (and source) and sort newest first; a source's documents are paged in id order
    // (a refresh's URL list, a re-chunk's warm phase).
    indexes: [[{ account_id: 1, source_id: 1, indexed_at: -1, _id: 1 }], [{ account_id: 1, indexed_at: -1, _id: 1 }], [{ account_id: 1, source_id: 1, _id: 1 }]],
  },
);
export type DocumentRecord = typeof documents.record;

/** A chunk of a document with its vector (Float32 bytes), the durable copy the index is rebuilt from. */
export interface ChunkRecord extends StoredChunk {
  _id: string;
  /** Embedding cache key of the text this chunk is embedded as. */
  embed_key: string;
  vector: Buffer | null;
  indexed_at: Date;
}

/** A computed embedding by cache key (model and text hash), shared by every chunk with the same text. */
export interface EmbeddingRecord {
  _id: string;
  vector: Buffer;
  created_at: Date;
}

/** A chunk waiting for the embedding stage; the queue's durable form, so a restart resumes it. */
export interface PendingRecord {
  _id: string;
  account_id: number;
  created_at: Date;
}

/**
 * Index bookkeeping, one small document each, read by _id (or all at once: there is one per account):
 * `account:<id>` holds the account's write generation, incremented before every batch of chunk writes,
 * which a snapshot of the embedded index must match to be loaded; `snapshots` holds the epoch of this
 * database's snapshots (a recreated database gets a new one); `deletion-queue` records that queued document
 * deletions are all in search_deletions (so start never scans search_documents for them).
 */
export interface IndexStateRecord {
  _id: string;
  account_id?: number;
  generation?: number;
  epoch?: string;
  /** `embedding-model`: the model every stored vector comes from (see model-switch.ts). */
  model?: string;
  created_at?: Date;
  updated_at?: Date;
}

/** A queued document deletion (the durable form of DELETE /knowledge/documents/:id), removed when done. */
export interface DeletionRecord {
  /** The document id. */
  _id: string;
  account_id: number;
  job_id: string;
  created_at: Date;
}

const chunkSchema = new Schema<ChunkRecord>(
  {
    _id: { type: String, required: true },
    account_id: { type: Number, required: true },
    source_id: { type: Number, required: true },
    document_id: { type: String, required: true },
    position: { type: Number, required: true },
    title: { type: String, default: "" },
    url: { type: String, default: "" },
    content: { type: String, required: true },
    // Absent in chunks written before citations carried ranges (docs/adr/0057-citations-on-hits.md).
    chunk_start: { type: Number, default: null },
    chunk_end: { type: Number, default: null },
    embed_key: { type: String, required: true },
    vector: { type: Buffer, default: null },
    indexed_at: { type: Date, required: true },
  },
  { versionKey: false, timestamps: false },
);
// Source deletion removes a source's chunks in one query.
chunkSchema.index({ account_id: 1, source_id: 1 });

const embeddingSchema = new Schema<EmbeddingRecord>(
  { _id: { type: String, required: true }, vector: { type: Buffer, required: true }, created_at: { type: Date, default: () => new Date() } },
  { versionKey: false },
);

const pendingSchema = new Schema<PendingRecord>(
  { _id: { type: String, required: true }, account_id: { type: Number, required: true }, created_at: { type: Date, default: () => new Date() } },
  { versionKey: false },
);

const stateSchema = new Schema<IndexStateRecord>(
  {
    _id: { type: String, required: true },
    account_id: { type: Number },
    generation: { type: Number },
    epoch: { type: String },
    model: { type: String },
  },
  { versionKey: false, timestamps: { createdAt: "created_at", updatedAt: "updated_at" } },
);

const deletionSchema = new Schema<DeletionRecord>(
  {
    _id: { type: String, required: true },
    account_id: { type: Number, required: true },
    job_id: { type: String, required: true },
    created_at: { type: Date, default: () => new Date() },
  },
  { versionKey: false },
);

// The index's own bookkeeping, keyed by ids derived from an account (chunk ids from document ids) or global
// (queues, markers): read by id by the embedding stage, snapshots and start-up, never addressed by clients.
// search_documents, which clients address, stays guarded.
for (const schema of [chunkSchema, pendingSchema, stateSchema, deletionSchema]) {
  crossAccount("search index bookkeeping keyed by account-derived ids", schema);
}

export interface SearchModels {
  documents: Model<DocumentRecord>;
  chunks: Model<ChunkRecord>;
  embeddings: Model<EmbeddingRecord>;
  pending: Model<PendingRecord>;
  state: Model<IndexStateRecord>;
  deletions: Model<DeletionRecord>;
}

/** The search service's models on a given connection (collections search_*). */
export function searchModels(db: Connection): SearchModels {
  const get = <T>(name: string, schema: Schema<T>, collection: string) =>
    (db.models[name] as Model<T>) ?? db.model<T>(name, schema, collection);
  return {
    documents: documents.model(db),
    chunks: get("SearchChunk", chunkSchema, "search_chunks"),
    embeddings: get("SearchEmbedding", embeddingSchema, "search_embeddings"),
    pending: get("SearchPendingEmbedding", pendingSchema, "search_pending_embeddings"),
    state: get("SearchIndexState", stateSchema, "search_index_state"),
    deletions: get("SearchDeletion", deletionSchema, "search_deletions"),
  };
}
