import { randomUUID } from "node:crypto";
import path from "node:path";
import { rm } from "node:fs/promises";
import type { Connection } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS, isDuplicateKeyError } from "../lib/errors";
import type { Ctx } from "../lib/meta";
import { MongoMixin } from "../lib/mongo.mixin";
import { toPage } from "../lib/pagination";
import { searchConfig, type SearchConfig } from "../lib/search/config";
import { EmbeddedEngine } from "../lib/search/embedded-engine";
import { LocalEmbeddingProvider, RemoteEmbeddingProvider, type EmbeddingProvider, type LocalModelName } from "../lib/search/embeddings";
import type { SearchIndex, SearchMode } from "../lib/search/port";
import { TypesenseEngine } from "../lib/search/typesense-engine";
import { EmbedStage } from "./search/embed-stage";
import { ModelSwitch } from "./search/model-switch";
import { DELETION_QUEUE_MARKER, IndexGenerations } from "./search/generations";
import { SnapshotKeeper, type RestoreReport } from "./search/snapshots";
import { searchModels, type DocumentRecord, type SearchModels } from "./search/model";
import {
  documentIdParam,
  listDocumentsParams,
  searchDocumentsParams,
  searchSourcesParams,
  type ListDocumentsParams,
  type SearchDocumentsParams,
  type SearchSourcesParams,
} from "./search/params";
import {
  candidateDepth,
  collapseByDocument,
  deletionResponse,
  documentDetail,
  documentResult,
  documentSummary,
  indexStatus,
  MAX_URLS_PER_CALL,
  parseSourceIds,
  sourceSearchResults,
} from "./search/rules";
import { indexDocuments, rebuildEmbedded, removeDocument, removeDocumentsAt, removeSource, type IncomingDocument, type StoreDeps } from "./search/store";
import { crossAccount } from "../lib/tenancy-guard";

/** Query embeddings kept in memory (repeated queries skip the model). */
const QUERY_CACHE_SIZE = 500;
/** Documents accepted by one indexDocuments call (one loader window is smaller). */
const MAX_DOCUMENTS_PER_CALL = 500;
/** Largest document content accepted (characters); bigger files are split by the loader. */
const MAX_CONTENT_LENGTH = 5_000_000;

/** Every action names the account explicitly: they are called service-to-service, never through the gateway. */
const accountParam = { accountId: { type: "number", integer: true, positive: true, convert: true } } as const;
const sourceParam = { sourceId: { type: "number", integer: true, positive: true, convert: true } } as const;

interface Methods {
  explicitAccount(params: { accountId: number }): number;
  ownedDocument(accountId: number, id: string): Promise<DocumentRecord>;
  queryVector(text: string): Promise<Float32Array | null>;
  rank(accountId: number, text: string, mode: SearchMode, sourceIds: number[] | undefined, depth: number): ReturnType<SearchIndex["search"]>;
  runDeletion(doc: DocumentRecord): Promise<void>;
  resumeDeletions(): Promise<void>;
  lastIndexedAt(accountId: number, sourceId?: number): Promise<Date | null>;
}
interface Vars {
  db: Connection;
  models: SearchModels;
  config: SearchConfig;
  index: SearchIndex;
  provider?: EmbeddingProvider;
  stage?: EmbedStage;
  modelSwitch?: ModelSwitch;
  deps: StoreDeps;
  generations: IndexGenerations;
  snapshots?: SnapshotKeeper;
  /** How the embedded index came back at the last start (tests and logs). */
  restoreReport?: RestoreReport;
  queryCache: Map<string, Float32Array>;
  deletions: Set<Promise<void>>;
}

/**
 * Knowledge document index and retrieval: semantic, keyword and hybrid search over chunks of knowledge
 * documents, on Typesense or on the embedded engine, with MongoDB as the durable copy. Every action is
 * internal (NATS only): the knowledge service serves the /knowledge URLs and calls them; the loader feeds the index.
 */
const SearchService: ServiceSchema<object, Methods, Vars> = {
  name: "search",
  mixins: [MongoMixin(searchModels)],

  actions: {
    // The routes of /knowledge/documents and /knowledge/search (the knowledge service serves them).

    searchDocuments: {
      visibility: "public",
      params: { ...accountParam, ...searchDocumentsParams },
      async handler(ctx: Ctx<SearchDocumentsParams & { accountId: number }>) {
        const { query, mode, limit, offset } = ctx.params;
        const ranked = await this.rank(this.explicitAccount(ctx.params), query, mode, parseSourceIds(ctx.params.source_ids), candidateDepth(offset, limit));
        const docs = collapseByDocument(ranked.hits);
        const best = docs[0]?.score ?? 0;
        return { results: docs.slice(offset, offset + limit).map((h) => documentResult(h, best)), total: docs.length, mode_used: ranked.modeUsed };
      },
    },

    listDocuments: {
      visibility: "public",
      params: { ...accountParam, ...listDocumentsParams },
      async handler(ctx: Ctx<ListDocumentsParams & { accountId: number }>) {
        const filter: Record<string, unknown> = { account_id: this.explicitAccount(ctx.params) };
        if (ctx.params.source_id !== undefined) filter.source_id = parseSourceIds([ctx.params.source_id])![0] ?? -1;
        const [rows, total] = await Promise.all([
          this.models.documents.find(filter, { chunk_ids: 1, title: 1, url: 1, content: 1, source_id: 1, indexed_at: 1 })
            .sort({ indexed_at: -1, _id: 1 }).skip(ctx.params.skip).limit(ctx.params.limit).lean<DocumentRecord[]>(),
          this.models.documents.countDocuments(filter),
        ]);
        return toPage(rows.map(documentSummary), total, ctx.params.skip, ctx.params.limit);
      },
    },

    documentStats: {
      visibility: "public",
      params: accountParam,
      async handler(ctx: Ctx<{ accountId: number }>) {
        const accountId = this.explicitAccount(ctx.params);
        const stats = await this.index.stats(accountId);
        const pending = stats.chunks - stats.vectors;
        return {
          total_documents: stats.documents,
          total_chunks: stats.chunks,
          embedded_chunks: stats.vectors,
          index_status: indexStatus(stats.chunks, this.provider ? pending : 0),
          index_size_bytes: stats.sizeBytes,
          last_indexed_at: await this.lastIndexedAt(accountId),
          engine: this.index.engine,
          embedding_model: this.provider?.model ?? null,
          pending_chunks: this.provider ? pending : 0,
          // The embedding stage of this search replica (all accounts): chunks/s over the last minute, batches at once.
          embedding_rate: this.stage?.progress().ratePerSecond ?? 0,
          embedding_workers: this.stage?.progress().concurrency ?? 0,
        };
      },
    },

    getDocument: {
      visibility: "public",
      params: { ...accountParam, ...documentIdParam },
      async handler(ctx: Ctx<{ accountId: number; document_id: string }>) {
        return documentDetail(await this.ownedDocument(this.explicitAccount(ctx.params), ctx.params.document_id));
      },
    },

    deleteDocument: {
      visibility: "public",
      params: { ...accountParam, ...documentIdParam },
      async handler(ctx: Ctx<{ accountId: number; document_id: string }>) {
        const doc = await this.ownedDocument(this.explicitAccount(ctx.params), ctx.params.document_id);
        if (doc.deletion_job_id) return deletionResponse(doc.deletion_job_id);
        const jobId = randomUUID();
        // Queue first: a deletion is resumed at start from the queue, which is read by _id only.
        await this.models.deletions.updateOne(
          { _id: doc._id },
          { $setOnInsert: { account_id: doc.account_id, job_id: jobId, created_at: new Date() } },
          { upsert: true },
        );
        await this.models.documents.updateOne({ _id: doc._id, account_id: doc.account_id }, { $set: { deletion_job_id: jobId } });
        void this.runDeletion(doc);
        return deletionResponse(jobId);
      },
    },

    searchSources: {
      visibility: "public",
      params: { ...accountParam, ...searchSourcesParams },
      async handler(ctx: Ctx<SearchSourcesParams & { accountId: number }>) {
        const { query, limit, min_score } = ctx.params;
        const ranked = await this.rank(this.explicitAccount(ctx.params), query, "hybrid", parseSourceIds(ctx.params.knowledge_source_ids), candidateDepth(0, limit));
        const results = sourceSearchResults(ranked.hits, min_score, limit);
        return { results, total_results: results.length, query };
      },
    },

    // The knowledge loader and the knowledge-sources service.

    /** Upserts a window of documents of one source; returns at once, vectors follow from the embedding stage. */
    indexDocuments: {
      visibility: "public",
      params: {
        ...accountParam,
        ...sourceParam,
        documents: {
          type: "array",
          max: MAX_DOCUMENTS_PER_CALL,
          items: {
            type: "object",
            props: {
              url: { type: "string", min: 1, max: 4096 },
              title: { type: "string", max: 1000, optional: true, nullable: true },
              content: { type: "string", max: MAX_CONTENT_LENGTH },
              metadata: { type: "object", optional: true, nullable: true },
            },
          },
        },
        chunkSize: { type: "number", integer: true, min: 100, max: 20_000, optional: true },
        overlap: { type: "number", integer: true, min: 0, max: 10_000, optional: true },
      },
      async handler(ctx: Ctx<{ accountId: number; sourceId: number; documents: IncomingDocument[]; chunkSize?: number; overlap?: number }>) {
        const { sourceId, documents } = ctx.params;
        const chunkSize = ctx.params.chunkSize ?? this.config.chunkSize;
        const overlap = Math.min(ctx.params.overlap ?? this.config.chunkOverlap, Math.floor(chunkSize / 2));
        return indexDocuments(this.deps, { accountId: this.explicitAccount(ctx.params), sourceId, documents, chunkSize, overlap });
      },
    },

    /** Removes every document of a source (the first step of a source deletion). */
    deleteSourceDocuments: {
      visibility: "public",
      params: { ...accountParam, ...sourceParam },
      handler(ctx: Ctx<{ accountId: number; sourceId: number }>) {
        return removeSource(this.deps, this.explicitAccount(ctx.params), ctx.params.sourceId);
      },
    },

    /** A page of the URLs of a source's documents, in id order (a finished refresh compares them with what it read). */
    sourceDocumentUrls: {
      visibility: "public",
      params: {
        ...accountParam,
        ...sourceParam,
        offset: { type: "number", integer: true, min: 0, default: 0, convert: true, optional: true },
        limit: { type: "number", integer: true, min: 1, max: MAX_URLS_PER_CALL, default: MAX_URLS_PER_CALL, convert: true, optional: true },
      },
      async handler(ctx: Ctx<{ accountId: number; sourceId: number; offset: number; limit: number }>) {
        const filter = { account_id: this.explicitAccount(ctx.params), source_id: ctx.params.sourceId };
        const rows = await this.models.documents.find(filter, { url: 1 }).sort({ _id: 1 }).skip(ctx.params.offset).limit(ctx.params.limit).lean<DocumentRecord[]>();
        return rows.map((r) => r.url);
      },
    },

    /** Removes a source's documents at these URLs (pages a refresh pruned); returns how many existed. */
    removeDocuments: {
      visibility: "public",
      params: { ...accountParam, ...sourceParam, urls: { type: "array", max: MAX_URLS_PER_CALL, items: { type: "string", min: 1, max: 4096 } } },
      handler(ctx: Ctx<{ accountId: number; sourceId: number; urls: string[] }>) {
        return removeDocumentsAt(this.deps, this.explicitAccount(ctx.params), ctx.params.sourceId, ctx.params.urls);
      },
    },

    /** Per-source index statistics (GET /knowledge/{id}/stats answers with this). */
    sourceStats: {
      visibility: "public",
      params: { ...accountParam, ...sourceParam },
      async handler(ctx: Ctx<{ accountId: number; sourceId: number }>) {
        const accountId = this.explicitAccount(ctx.params);
        const stats = await this.index.stats(accountId, ctx.params.sourceId);
        return {
          knowledge_source_id: ctx.params.sourceId,
          index_name: this.index.engine === "typesense" ? this.config.typesense.collection : `embedded/account-${accountId}`,
          document_count: stats.documents,
          index_size_bytes: stats.sizeBytes,
          last_indexed_at: await this.lastIndexedAt(accountId, ctx.params.sourceId),
        };
      },
    },

    /** A page of a source's documents (GET /knowledge/{id}/documents answers with this). */
    sourceDocuments: {
      visibility: "public",
      params: {
        ...accountParam,
        ...sourceParam,
        limit: { type: "number", integer: true, min: 1, max: 200, default: 50, convert: true, optional: true },
        offset: { type: "number", integer: true, min: 0, default: 0, convert: true, optional: true },
      },
      async handler(ctx: Ctx<{ accountId: number; sourceId: number; limit: number; offset: number }>) {
        const filter = { account_id: this.explicitAccount(ctx.params), source_id: ctx.params.sourceId };
        const { limit, offset } = ctx.params;
        const [rows, total] = await Promise.all([
          this.models.documents.find(filter, { chunk_ids: 1, title: 1, url: 1, content: 1, source_id: 1, indexed_at: 1 })
            .sort({ indexed_at: -1, _id: 1 }).skip(offset).limit(limit).lean<DocumentRecord[]>(),
          this.models.documents.countDocuments(filter),
        ]);
        return { documents: rows.map(documentSummary), total, limit, offset };
      },
    },

    /** Searchable documents of a source, as the index counts them (the loader re-reads it after every window). */
    countDocuments: {
      visibility: "public",
      params: { ...accountParam, ...sourceParam },
      handler(ctx: Ctx<{ accountId: number; sourceId: number }>) {
        return this.index.countDocuments(this.explicitAccount(ctx.params), ctx.params.sourceId);
      },
    },
  },

  events: {
    /** A search replica that stopped or died leaves its queued embeddings in the durable queue: take them over. */
    "$node.disconnected"(ctx: Ctx<{ node: { services?: { name: string }[] } }>) {
      if (!this.stage || !ctx.params.node.services?.some((s) => s.name === "search")) return;
      this.stage.recover().catch((err) => this.logger.warn("Taking over pending embeddings failed", err));
    },
  },

  methods: {
    /** The one tenancy escape hatch: internal actions carry the account as a param, set by the calling service. */
    explicitAccount(params) {
      return params.accountId;
    },

    /** A document of the caller's account: 404 when absent, 403 when it belongs to another account. */
    async ownedDocument(accountId, id) {
      const doc = await crossAccount("a global document id; its account is checked next (403)", this.models.documents.findById(id)).lean<DocumentRecord>();
      if (!doc) throw ERRORS.notFound("Document", id);
      if (doc.account_id !== accountId) throw ERRORS.forbidden(`Document ${id} belongs to another account`);
      return doc;
    },

    /** The query's embedding, or null when there is no provider or it fails (the search then says keyword). */
    async queryVector(text) {
      // During a model switch the index holds vectors of two models: keyword until the switch is done.
      if (!this.provider || this.modelSwitch?.switching) return null;
      const hit = this.queryCache.get(text);
      if (hit) return hit;
      try {
        const [vector] = await this.provider.embed([text], "query");
        if (this.queryCache.size >= QUERY_CACHE_SIZE) this.queryCache.delete(this.queryCache.keys().next().value!);
        this.queryCache.set(text, vector!);
        return vector!;
      } catch (err) {
        this.logger.warn("Query embedding failed; answering with keyword search", (err as Error).message);
        return null;
      }
    },

    async rank(accountId, text, mode, sourceIds, depth) {
      const vector = mode === "keyword" ? null : await this.queryVector(text);
      return this.index.search({
        accountId,
        text,
        mode,
        vector,
        sourceIds,
        depth,
        alpha: this.config.hybridAlpha,
        maxDistance: this.config.maxDistance,
      });
    },

    runDeletion(doc) {
      const job = removeDocument(this.deps, doc)
        .then(() => this.models.deletions.deleteOne({ _id: doc._id }))
        .then(() => undefined)
        .catch((err) => this.logger.error(`Deleting document ${doc._id} failed; retried at next start`, err))
        .finally(() => this.deletions.delete(job));
      this.deletions.add(job);
      return job;
    },

    /** Deletions queued before a restart are finished now (the queue replaced a scan of search_documents). */
    async resumeDeletions() {
      const { state, deletions, documents } = this.models;
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
        if (doc?.deletion_job_id) void this.runDeletion(doc);
        else await deletions.deleteOne({ _id: queued._id });
      }
    },

    async lastIndexedAt(accountId, sourceId) {
      const filter = sourceId === undefined ? { account_id: accountId } : { account_id: accountId, source_id: sourceId };
      const last = await this.models.documents.findOne(filter, { indexed_at: 1 }).sort({ indexed_at: -1 }).lean<DocumentRecord>();
      return last?.indexed_at ?? null;
    },
  },

  async started() {
    this.config = searchConfig();
    this.queryCache = new Map();
    this.deletions = new Set();
    const { embedding, typesense } = this.config;
    if (embedding.provider === "local") this.provider = new LocalEmbeddingProvider(embedding.model as LocalModelName, { workers: embedding.workers });
    else if (embedding.provider === "openai") {
      this.provider = new RemoteEmbeddingProvider(embedding.url, embedding.model, embedding.dimensions, embedding.apiKey || undefined);
    }
    const dimensions = this.provider?.dimensions ?? embedding.dimensions;
    const embedded = this.config.engine === "embedded" ? new EmbeddedEngine({ dimensions }) : undefined;
    this.modelSwitch = embedded && this.provider ? new ModelSwitch({ models: this.models, provider: this.provider, logger: this.logger }) : undefined;
    const switching = (await this.modelSwitch?.needed()) ?? false;
    this.index = embedded ?? new TypesenseEngine({ ...typesense, dimensions });
    await this.index.start();
    this.generations = new IndexGenerations(this.models.state);
    this.deps = { models: this.models, index: this.index, provider: this.provider, generations: this.generations, logger: this.logger };
    if (embedded && this.config.snapshots.enabled) {
      const { dir, settleMs, maxDelayMs } = this.config.snapshots;
      const databaseDir = path.join(dir, this.db.name.replace(/[^\w.-]/g, "_"));
      // Snapshots hold the previous model's vectors: rebuilt from MongoDB, without them.
      if (switching) await rm(databaseDir, { recursive: true, force: true });
      this.snapshots = new SnapshotKeeper({
        engine: embedded,
        generations: this.generations,
        dir: databaseDir,
        settleMs,
        maxDelayMs,
        logger: this.logger,
      });
      const r = (this.restoreReport = await this.snapshots.restore(this.deps));
      this.logger.info(
        `Embedded search index in ${r.ms} ms: ${r.fromSnapshot.length} accounts (${r.chunksFromSnapshots} chunks) from snapshots, ` +
          `${r.rebuilt.length} accounts (${r.chunksFromMongo} chunks) rebuilt from MongoDB${r.firstStart ? " (first start with snapshots)" : ""}`,
      );
      for (const [account, reason] of Object.entries(r.reasons)) this.logger.info(`Search index of account ${account} rebuilt: ${reason}`);
    } else if (embedded) {
      const started = Date.now();
      const n = await rebuildEmbedded(this.deps, embedded);
      this.logger.info(`Embedded search index rebuilt from MongoDB: ${n.chunks} chunks in ${Date.now() - started} ms`);
    }
    if (this.provider) {
      this.stage = new EmbedStage({
        provider: this.provider,
        models: this.models,
        index: this.index,
        logger: this.logger,
        batchSize: embedding.batchSize,
        concurrency: embedding.workers,
        generations: this.generations,
      });
      this.deps.stage = this.stage;
      await this.stage.recover();
      this.modelSwitch?.start(this.stage);
      if (this.provider instanceof LocalEmbeddingProvider) {
        this.provider.warmUp().catch((err) => this.logger.warn("Embedding model failed to load", err));
      }
    }
    await this.resumeDeletions();
  },

  async stopped() {
    await this.modelSwitch?.stop();
    await this.stage?.stop();
    await Promise.all([...(this.deletions ?? [])]);
    // The last snapshots, so the next start loads instead of rebuilding.
    await this.snapshots?.flush();
    await this.provider?.close();
    await this.index?.stop();
  },
};

export default SearchService;
