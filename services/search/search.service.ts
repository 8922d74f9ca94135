import type { Connection } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS } from "../../lib/errors";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { pageStart, toPage } from "../../lib/pagination";
import type { SearchConfig } from "../../lib/search/config";
import { configOf } from "../../lib/config";
import type { ChunkHit, SearchIndex, SearchMode } from "../../lib/search/port";
import { httpReranker, type Reranker } from "../../lib/search/rerank";
import { filterProblems, type SearchFilter } from "../../lib/search/filters";
import { searchModels, type DocumentRecord, type SearchModels } from "./model";
import {
  storedChunkingParam,
  documentIdParam,
  listDocumentsParams,
  searchDocumentsParams,
  searchSourcesParams,
  type ListDocumentsParams,
  type RankingParams,
  type SearchDocumentsParams,
  type SearchSourcesParams,
} from "./params";
import {
  bestFirst,
  candidateDepth,
  collapseByDocument,
  deletionResponse,
  documentDetail,
  documentStats,
  embedText,
  fusedScores,
  MAX_URLS_PER_CALL,
  parseSourceIds,
  rankingProblems,
  rerankedOrder,
  scoredDocumentPage,
  scoredSourceResults,
  type Scored,
} from "./rules";
import { startSearch, stopSearch, type SearchRuntime } from "./runtime";
import { documentPage, indexDocuments, removeDocumentsAt, removeSource, type IncomingDocument } from "./store";
import { switchChunking, warmChunking } from "./rechunk";
import { effectiveChunking, type ChunkingSettings } from "../../lib/search/chunking";
import { crossAccount } from "../../lib/tenancy-guard";

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
  checkQuery(params: RankingParams & { mode: SearchMode; filters?: unknown }): void;
  rank(accountId: number, q: { text: string; mode: SearchMode; sourceIds?: number[]; depth: number; hybridWeight?: number; filter?: SearchFilter }): ReturnType<SearchIndex["search"]>;
  rerankStage(query: string, candidates: ChunkHit[], params: RankingParams): Promise<{ ranked: Scored[]; reranked?: boolean }>;
  lastIndexedAt(accountId: number, sourceId?: number): Promise<Date | null>;
}
/** The runtime's parts are the service's own variables (tests and benches read index, snapshots, modelSwitch). */
interface Vars extends SearchRuntime {
  db: Connection;
  models: SearchModels;
  config: SearchConfig;
  /** The rerank stage's provider; null when RERANK_URL is not set. */
  reranker: Reranker | null;
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
        this.checkQuery(ctx.params);
        const { source_ids: sourceIds, hybrid_weight: hybridWeight, filters: filter } = ctx.params;
        const ranked = await this.rank(this.explicitAccount(ctx.params), { text: query, mode, sourceIds, depth: candidateDepth(offset, limit), hybridWeight, filter });
        const stage = await this.rerankStage(query, collapseByDocument(bestFirst(ranked.hits)), ctx.params);
        return { ...scoredDocumentPage(stage.ranked, offset, limit, query), mode_used: ranked.modeUsed, ...(stage.reranked === undefined ? {} : { reranked: stage.reranked }) };
      },
    },

    listDocuments: {
      visibility: "public",
      params: { ...accountParam, ...listDocumentsParams },
      async handler(ctx: Ctx<ListDocumentsParams & { accountId: number }>) {
        const filter: Record<string, unknown> = { account_id: this.explicitAccount(ctx.params) };
        if (ctx.params.source_id !== undefined) filter.source_id = parseSourceIds([ctx.params.source_id])![0] ?? -1;
        const skip = pageStart(ctx.params);
        const { documents, total } = await documentPage(this.models, filter, skip, ctx.params.limit);
        return toPage(documents, total, skip, ctx.params.limit);
      },
    },

    documentStats: {
      visibility: "public",
      params: accountParam,
      async handler(ctx: Ctx<{ accountId: number }>) {
        const accountId = this.explicitAccount(ctx.params);
        const [stats, lastIndexedAt] = await Promise.all([this.index.stats(accountId), this.lastIndexedAt(accountId)]);
        return documentStats(stats, lastIndexedAt, this.index.engine, this.provider?.model ?? null, this.stage?.progress());
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
        return deletionResponse(await this.deletions.queue(await this.ownedDocument(this.explicitAccount(ctx.params), ctx.params.document_id)));
      },
    },

    searchSources: {
      visibility: "public",
      params: { ...accountParam, ...searchSourcesParams },
      async handler(ctx: Ctx<SearchSourcesParams & { accountId: number }>) {
        const { query, mode, limit, min_score } = ctx.params;
        this.checkQuery(ctx.params);
        const { knowledge_source_ids: sourceIds, hybrid_weight: hybridWeight, filters: filter } = ctx.params;
        const ranked = await this.rank(this.explicitAccount(ctx.params), { text: query, mode, sourceIds, depth: candidateDepth(0, limit), hybridWeight, filter });
        const stage = await this.rerankStage(query, bestFirst(ranked.hits), ctx.params);
        const results = scoredSourceResults(stage.ranked, min_score, limit, query);
        return { results, total_results: results.length, query, ...(stage.reranked === undefined ? {} : { reranked: stage.reranked }) };
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
              sections: { type: "array", optional: true, max: 100_000, items: { type: "number", integer: true, min: 0 } },
            },
          },
        },
        // The source's own settings (complete, as stored); none means the deployment's.
        chunking: storedChunkingParam,
      },
      async handler(ctx: Ctx<{ accountId: number; sourceId: number; documents: IncomingDocument[]; chunking?: ChunkingSettings | null }>) {
        const { sourceId, documents } = ctx.params;
        const chunking = effectiveChunking(ctx.params.chunking, this.config);
        return indexDocuments(this.deps, { accountId: this.explicitAccount(ctx.params), sourceId, documents, chunking });
      },
    },

    /**
     * Phase 1 of a re-chunk (the loader's rechunk job): a page of the source's documents, their new chunks' vectors
     * computed into the embedding cache; the index is not touched. Returns where the next page starts (null: done).
     */
    warmChunking: {
      visibility: "public",
      params: {
        ...accountParam,
        ...sourceParam,
        chunking: storedChunkingParam,
        after: { type: "string", max: 64, optional: true, nullable: true },
        limit: { type: "number", integer: true, min: 1, max: MAX_DOCUMENTS_PER_CALL },
      },
      handler(ctx: Ctx<{ accountId: number; sourceId: number; chunking?: ChunkingSettings | null; after?: string | null; limit: number }>) {
        const { sourceId, after, limit } = ctx.params;
        const chunking = effectiveChunking(ctx.params.chunking, this.config);
        return warmChunking(this.deps, { accountId: this.explicitAccount(ctx.params), sourceId, chunking, after: after ?? null, limit, batchSize: this.config.embedding.batchSize });
      },
    },

    /** Phase 2 of a re-chunk: every document of the source not yet under the settings, re-indexed in one index change. */
    switchChunking: {
      visibility: "public",
      params: { ...accountParam, ...sourceParam, chunking: storedChunkingParam },
      handler(ctx: Ctx<{ accountId: number; sourceId: number; chunking?: ChunkingSettings | null }>) {
        const chunking = effectiveChunking(ctx.params.chunking, this.config);
        return switchChunking(this.deps, { accountId: this.explicitAccount(ctx.params), sourceId: ctx.params.sourceId, chunking });
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
        const { limit, offset } = ctx.params;
        const filter = { account_id: this.explicitAccount(ctx.params), source_id: ctx.params.sourceId };
        return { ...(await documentPage(this.models, filter, offset, limit)), limit, offset };
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

    /**
     * 422 for what no params schema sees: a ranking knob that would do nothing (docs/adr/0056-rerank-and-hybrid-weight.md)
     * and a filter outside its grammar (docs/adr/0058-metadata-filters.md).
     */
    checkQuery(params) {
      const problems = [...rankingProblems(params, params.mode, this.reranker !== null), ...(params.filters === undefined ? [] : filterProblems(params.filters))];
      if (problems.length) throw ERRORS.validation(problems);
    },

    async rank(accountId, { text, mode, sourceIds, depth, hybridWeight, filter }) {
      const vector = mode === "keyword" ? null : await this.queryVectors.of(text);
      return this.index.search({
        accountId,
        text,
        mode,
        vector,
        sourceIds,
        depth,
        // A query's hybrid_weight replaces the deployment's prior; each query's confidences still apply.
        alpha: hybridWeight ?? this.config.hybridAlpha,
        maxDistance: this.config.maxDistance,
        filter,
      });
    },

    /**
     * The optional stage after fusion: the first top-n candidates (documents, or chunks for the source search) in
     * the reranker's order. It fails open: a provider that errs or times out leaves the fused order, with
     * reranked: false in the response (search stays up when an optional provider is down).
     */
    async rerankStage(query, candidates, params) {
      if (!params.rerank || !this.reranker) return { ranked: fusedScores(candidates) };
      const topN = Math.min(params.rerank_top_n ?? this.config.rerank.topN, candidates.length);
      const head = candidates.slice(0, topN);
      try {
        const hits = await this.reranker.rerank(query, head.map((h: ChunkHit) => embedText(h.title, h.content)), head.length);
        return { ranked: rerankedOrder(candidates, hits, topN), reranked: true };
      } catch (err) {
        this.logger.warn(`Rerank failed, serving the fused order: ${(err as Error).message}`);
        return { ranked: fusedScores(candidates), reranked: false };
      }
    },

    async lastIndexedAt(accountId, sourceId) {
      const filter = sourceId === undefined ? { account_id: accountId } : { account_id: accountId, source_id: sourceId };
      const last = await this.models.documents.findOne(filter, { indexed_at: 1 }).sort({ indexed_at: -1 }).lean<DocumentRecord>();
      return last?.indexed_at ?? null;
    },
  },

  async started() {
    this.config = configOf(this).search;
    this.reranker = this.config.rerank.url ? httpReranker(this.config.rerank) : null;
    // A document the account index's DELETE removed: the knowledge service records its source's new document_count.
    const documentRemoved = (doc: DocumentRecord) => void this.broker.emit("search.documentRemoved", { accountId: doc.account_id, sourceId: doc.source_id });
    Object.assign(this, await startSearch(this.config, this.models, this.db.name, this.logger, documentRemoved));
  },

  async stopped() {
    if (this.index) await stopSearch(this);
  },
};

export default SearchService;
