import type { Connection, Model } from "mongoose";
import type { ActionSchema, Service, ServiceSchema } from "moleculer";
import { leanToJSON } from "../../lib/db";
import { ERRORS } from "../../lib/errors";
import { pageStart, pageStartParams } from "../../lib/pagination";
import { httpUrlProblem } from "../../lib/http-url";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { crudActions, eventRecords, type ResponseDecl } from "../../lib/resource";
import { respondCreated } from "../../lib/responses";
import { configOf } from "../../lib/config";
import { secretBox, type SecretBox } from "../../lib/secrets";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { changeOf } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { nextRecordId } from "../../lib/ids";
import { knowledgeSourceModel, loadJobModel, type KnowledgeSourceRecord, type LoadJobRecord } from "./model";
import { knowledgeSources, sourceListFilters } from "./resource";
import { DocumentDetail, DocumentSearch, DocumentStats, DocumentSummary, Preload, Queued, SourceDocuments, SourceSearch, SourceStats } from "./views";
import { enqueueJob } from "./jobs";
import { deletionResponse, derivedLabel, preloadResponse, preloadSkipped } from "./rules";
import { nextRefreshAt, refreshPolicy, type RefreshInput } from "./refresh";
import { preloadDecision, rechunkNeeded } from "./states";
import { resolveSourceType } from "../knowledge-loader";
import { NO_CONTENT } from "../../lib/resource";
import { respondNoContent } from "../../lib/responses";
import { documentBodyParams, mustTakeUploads, replacementUrlRule, UPLOAD_DATA_TYPE, uploadDocument, uploadUrl, type DocumentBody, type UploadDocument } from "./uploads";
import { documentIdParam, listDocumentsParams, searchDocumentsParams, searchSourcesParams } from "../search";
import { chunkingSettings, effectiveChunking, plainChunking, type ChunkingInput, type ChunkingSettings } from "../../lib/search/chunking";

const idParam = knowledgeSources.idParams;
type SourceParams = typeof knowledgeSources.types.update;

/** The stored refresh fields of a given `refresh` (null removes the policy); 422 when it is not usable. */
function refreshFields(refresh: RefreshInput | null, now = new Date()): Pick<KnowledgeSourceRecord, "refresh" | "next_refresh_at"> {
  if (refresh === null) return { refresh: null, next_refresh_at: null };
  const { policy, problems } = refreshPolicy(refresh);
  if (problems.length) throw ERRORS.validation(problems);
  return { refresh: policy, next_refresh_at: nextRefreshAt(policy, now) };
}

/**
 * The paths as given; 422 at `paths[i]` for one that names no http(s) host (the body's URL rule lets `http://:3250/`
 * through), and for an empty list unless the source is an upload source (its documents come by POST, not from paths).
 */
function checkedPaths(paths: string[], dataType: string | undefined): string[] {
  if (!paths.length && dataType !== UPLOAD_DATA_TYPE) {
    throw ERRORS.validation([{ type: "arrayMin", field: "paths", message: "The 'paths' field must contain at least 1 items (only a source of data_type upload may have none)." }]);
  }
  const problems = paths.flatMap((path, i) => httpUrlProblem(path, `paths[${i}]`) ?? []);
  if (problems.length) throw ERRORS.validation(problems);
  return paths;
}

/** The stored settings a given `chunking` makes over `current` (null: the deployment's default); 422 when not usable. */
function chunkingFields(input: ChunkingInput | null, current: ChunkingSettings | null, deployment: { chunkSize: number; chunkOverlap: number }): ChunkingSettings | null {
  if (input === null) return null;
  const { settings, problems } = chunkingSettings(input, effectiveChunking(current, deployment));
  if (problems.length) throw ERRORS.validation(problems);
  return settings;
}

interface Methods extends TenancyMethods, EventsMethods {
  findSource(ctx: Ctx<unknown>, id: number): Promise<KnowledgeSourceRecord & { toJSON(): object }>;
  findChangeableSource(ctx: Ctx<unknown>, id: number): Promise<KnowledgeSourceRecord & { toJSON(): object; set(fields: object): void; save(): Promise<unknown> }>;
  queueLoad(source: KnowledgeSourceRecord, force: boolean): Promise<{ job: LoadJobRecord; created: boolean }>;
  sourceDocument(ctx: Ctx<unknown>, source: KnowledgeSourceRecord, documentId: string): Promise<{ id: string; url: string; source_id: number }>;
  indexUpload(ctx: Ctx<unknown>, source: KnowledgeSourceRecord, url: string, doc: UploadDocument): Promise<string>;
  recordUploadCounts(ctx: Ctx<unknown>, source: KnowledgeSourceRecord): Promise<boolean>;
  recordDocumentCount(ctx: Ctx<unknown>, accountId: number, sourceId: number): Promise<void>;
}
interface Vars {
  db: Connection;
  models: { sources: Model<KnowledgeSourceRecord>; jobs: Model<LoadJobRecord> };
  /** Seals wiki tokens (configuration's secretsKey). */
  secrets: SecretBox;
}

/** What recordUploadCounts's write throws when the source's deletion is queued: nothing recorded. */
const SOURCE_BEING_DELETED = new Error("The knowledge source is being deleted");

/** A route answered by the search service's internal action `action`, for the caller's account. */
function searchRoute(action: string, rest: string, summary: string, params: ActionSchema["params"], response: ResponseDecl): ActionSchema<Service<{ rest: string }> & Vars & Methods> {
  return {
    rest,
    summary,
    ...(params ? { params } : {}),
    response,
    handler(ctx: Ctx<object>) {
      return ctx.call(`search.${action}`, { ...ctx.params, accountId: this.accountOf(ctx) });
    },
  };
}

/**
 * Knowledge sources: CRUD, queued loading (preload) and deletion, and per-source index views. The work
 * itself runs in knowledge-loader replicas, which claim jobs from the load_jobs collection. Every /knowledge
 * URL is served here; the document and search routes are answered by the search service's index.
 */
const KnowledgeService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "knowledge",
  mixins: [
    EventsMixin({ records: eventRecords(knowledgeSources) }),
    MongoMixin((db) => ({ sources: knowledgeSourceModel(db), jobs: loadJobModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    ...crudActions(knowledgeSources, {
      actions: ["list", "get"],
      filters: sourceListFilters,
    }),

    /** Creating resolves the name, description and data type from the paths, then queues the first load. */
    create: {
      rest: "POST /knowledge",
      summary: "Create a knowledge source (and queue its load)",
      params: { ...knowledgeSources.createParams, auto_load: { type: "boolean", convert: true, default: true, optional: true, in: "query", description: "Queue a load at once" } },
      response: knowledgeSources.view.one(201),
      async handler(ctx: Ctx<typeof knowledgeSources.types.create & { auto_load: boolean }>) {
        const paths = checkedPaths(ctx.params.paths, ctx.params.data_type);
        const upload = ctx.params.data_type === UPLOAD_DATA_TYPE;
        if (upload && ctx.params.refresh) throw ERRORS.validation([{ type: "forbidden", field: "refresh", message: "A source of data_type upload is never loaded: it takes no refresh policy" }]);
        // An upload source is never loaded: its documents are added one by one.
        const auto_load = ctx.params.auto_load && !upload;
        const label = paths.length ? derivedLabel(paths) : "Uploaded documents";
        const name = ctx.params.name?.trim() || label;
        const fields = {
          name,
          description: ctx.params.description?.trim() || label,
          data_type: await resolveSourceType(ctx.params.data_type ?? "auto", paths, configOf(this).addressPolicy),
          paths,
          credentials: ctx.params.auth_token ? this.secrets.seal(ctx.params.auth_token) : null,
          ...(ctx.params.refresh !== undefined ? refreshFields(ctx.params.refresh) : {}),
          ...(ctx.params.chunking ? { chunking: chunkingFields(ctx.params.chunking, null, configOf(this).search) } : {}),
        };
        const id = await nextRecordId(this.db, KNOWLEDGE_SOURCES_COLLECTION);
        let source!: KnowledgeSourceRecord;
        const body = await this.recordChange(changeOf("knowledge_source.created", KNOWLEDGE_SOURCES_COLLECTION, { _id: id, account_id: this.accountOf(ctx) }), async () => {
          source = await this.createIdentified(ctx, this.models.sources, { ...fields, _id: id }, { name, label: "Knowledge source" });
          return leanToJSON(this.models.sources, source);
        });
        if (auto_load) await this.queueLoad(source, false);
        return respondCreated(ctx, knowledgeSources.location(id), body);
      },
    },

    update: {
      rest: ["PUT /knowledge/:knowledge_source_id", "PATCH /knowledge/:knowledge_source_id"],
      operationIds: ["update", "patch"],
      summary: "Update a knowledge source (only the given fields change)",
      params: { ...idParam, ...knowledgeSources.updateParams },
      response: knowledgeSources.view.one(),
      async handler(ctx: Ctx<SourceParams & { knowledge_source_id: number }>) {
        const source = await this.findChangeableSource(ctx, ctx.params.knowledge_source_id);
        const { name, description, paths, data_type, auth_token, refresh, chunking } = ctx.params;
        if (data_type && (data_type === UPLOAD_DATA_TYPE) !== (source.data_type === UPLOAD_DATA_TYPE)) {
          throw ERRORS.validation([{ type: "forbidden", field: "data_type", message: "A source becomes or stops being an upload source only by creating a new one" }]);
        }
        if (source.data_type === UPLOAD_DATA_TYPE && refresh) throw ERRORS.validation([{ type: "forbidden", field: "refresh", message: "A source of data_type upload is never loaded: it takes no refresh policy" }]);
        if (refresh !== undefined) source.set(refreshFields(refresh));
        if (paths) source.paths = checkedPaths(paths, source.data_type);
        if (name?.trim()) source.name = name.trim();
        if (description !== undefined) source.description = description?.trim() || (source.paths.length ? derivedLabel(source.paths) : source.name);
        if (data_type) source.data_type = await resolveSourceType(data_type, source.paths, configOf(this).addressPolicy);
        if (auth_token) source.credentials = this.secrets.seal(auth_token);
        if (chunking !== undefined) {
          const deployment = configOf(this).search;
          const before = plainChunking(source.chunking);
          source.chunking = chunkingFields(chunking, before, deployment);
          // The stored documents are cut again in the background.
          if (rechunkNeeded(before, source.chunking, source.rechunk?.status, deployment)) {
            const { job } = await enqueueJob(this.models.jobs, { kind: "rechunk", account_id: source.account_id, knowledge_source_id: source._id });
            source.rechunk = { status: "queued", job_id: job._id, queued_at: new Date(), documents_done: 0, documents_total: null, finished_at: null, error: null };
          }
        }
        return this.recordChange(changeOf("knowledge_source.updated", KNOWLEDGE_SOURCES_COLLECTION, source), async () => {
          await source.save();
          return source.toJSON();
        });
      },
    },

    remove: {
      rest: "DELETE /knowledge/:knowledge_source_id",
      summary: "Delete a knowledge source (queued; poll until 404)",
      params: idParam,
      response: Queued.one(),
      async handler(ctx: Ctx<{ knowledge_source_id: number }>) {
        const source = await this.findOwned(ctx, this.models.sources, ctx.params.knowledge_source_id, "Knowledge source");
        await this.models.sources.updateOne({ _id: source._id, account_id: source.account_id }, { deleting: true }, { timestamps: false });
        const { job } = await enqueueJob(this.models.jobs, { kind: "delete-source", account_id: source.account_id, knowledge_source_id: source._id });
        return deletionResponse(job._id, "Knowledge source");
      },
    },

    preload: {
      rest: "POST /knowledge/:knowledge_source_id/preload",
      summary: "Queue a load of a knowledge source",
      params: { ...idParam, force: { type: "boolean", convert: true, default: true, optional: true, in: "query", description: "Re-read every page, even unchanged ones" } },
      response: Preload.one(),
      async handler(ctx: Ctx<{ knowledge_source_id: number; force: boolean }>) {
        const source = await this.findChangeableSource(ctx, ctx.params.knowledge_source_id);
        if (source.data_type === UPLOAD_DATA_TYPE) return { ...preloadSkipped(), message: "An upload source is not loaded; nothing was queued", note: "Its documents are added with POST /api/v1/knowledge/{id}/documents" };
        if (preloadDecision(source, ctx.params.force) === "already-loaded") return preloadSkipped();
        const { job, created } = await this.queueLoad(source, ctx.params.force);
        const note = created
          ? "Loading runs in the background; poll GET /api/v1/knowledge/{id} about every 2 seconds"
          : "A load of this source is already queued or running; this is its event";
        return preloadResponse(job._id, note);
      },
    },

    stats: {
      rest: "GET /knowledge/:knowledge_source_id/stats",
      summary: "Index statistics of a knowledge source",
      params: idParam,
      response: SourceStats.one(),
      async handler(ctx: Ctx<{ knowledge_source_id: number }>) {
        const source = await this.findSource(ctx, ctx.params.knowledge_source_id);
        const stats = await ctx.call<object, object>("search.sourceStats", { accountId: source.account_id, sourceId: source._id });
        const { last_refresh, next_refresh_at } = source.toJSON() as Pick<KnowledgeSourceRecord, "last_refresh" | "next_refresh_at">;
        return { ...stats, last_refresh, next_refresh_at };
      },
    },

    documents: {
      rest: "GET /knowledge/:knowledge_source_id/documents",
      summary: "List a knowledge source's documents",
      params: {
        ...idParam,
        limit: { type: "number", integer: true, min: 1, max: 200, default: 50, convert: true, optional: true, description: "How many documents to return at most" },
        ...pageStartParams,
      },
      response: SourceDocuments.one(),
      async handler(ctx: Ctx<{ knowledge_source_id: number; limit: number; offset?: number; skip?: number }>) {
        const offset = pageStart(ctx.params);
        const source = await this.findSource(ctx, ctx.params.knowledge_source_id);
        return ctx.call("search.sourceDocuments", { accountId: source.account_id, sourceId: source._id, limit: ctx.params.limit, offset });
      },
    },

    // Documents of an upload source (docs/adr/0055-uploaded-documents.md): indexed through the search service's
    // actions as the loader's pages are, with a knowledge_source.updated event for the source's new counts.

    addDocument: {
      rest: "POST /knowledge/:knowledge_source_id/documents",
      summary: "Add a document to an upload knowledge source (a file, multipart field `file`, or a JSON text)",
      params: { ...idParam, ...documentBodyParams },
      multipartFiles: ["file"],
      response: DocumentDetail.one(201),
      async handler(ctx: Ctx<DocumentBody & { knowledge_source_id: number }>) {
        const source = await this.findChangeableSource(ctx, ctx.params.knowledge_source_id);
        mustTakeUploads(source);
        const limits = configOf(this).uploads;
        const doc = await uploadDocument(ctx.params, limits);
        const held = await ctx.call<{ total: number }, object>("search.sourceDocuments", { accountId: source.account_id, sourceId: source._id, limit: 1, offset: 0 });
        if (held.total >= limits.maxDocumentsPerSource) {
          throw ERRORS.validation([{ type: "arrayMax", field: "knowledge_source_id", message: `Knowledge source ${source._id} holds ${held.total} documents, the limit of an upload source (${limits.maxDocumentsPerSource})` }]);
        }
        const id = await this.indexUpload(ctx, source, uploadUrl(source._id, ctx.params.url), doc);
        const detail = await ctx.call<object, object>("search.getDocument", { accountId: source.account_id, document_id: id });
        return respondCreated(ctx, `/api/v1/knowledge/${source._id}/documents/${id}`, detail);
      },
    },

    getSourceDocument: {
      rest: "GET /knowledge/:knowledge_source_id/documents/:document_id",
      summary: "Get a document of a knowledge source with its full content",
      params: { ...idParam, ...documentIdParam },
      response: DocumentDetail.one(),
      async handler(ctx: Ctx<{ knowledge_source_id: number; document_id: string }>) {
        const source = await this.findSource(ctx, ctx.params.knowledge_source_id);
        return this.sourceDocument(ctx, source, ctx.params.document_id);
      },
    },

    replaceDocument: {
      rest: "PUT /knowledge/:knowledge_source_id/documents/:document_id",
      summary: "Replace an uploaded document (same id and url; a new file or text, title and metadata)",
      params: { ...idParam, ...documentIdParam, ...documentBodyParams, url: replacementUrlRule },
      multipartFiles: ["file"],
      response: DocumentDetail.one(),
      async handler(ctx: Ctx<DocumentBody & { knowledge_source_id: number; document_id: string }>) {
        const source = await this.findChangeableSource(ctx, ctx.params.knowledge_source_id);
        mustTakeUploads(source);
        const existing = await this.sourceDocument(ctx, source, ctx.params.document_id);
        if (ctx.params.url !== undefined && ctx.params.url !== existing.url) {
          throw ERRORS.validation([{ type: "forbidden", field: "url", message: "A document's url is its key and does not change; add a new document instead" }]);
        }
        const doc = await uploadDocument({ ...ctx.params, url: existing.url.startsWith("upload://") ? undefined : existing.url }, configOf(this).uploads);
        const id = await this.indexUpload(ctx, source, existing.url, doc);
        return ctx.call("search.getDocument", { accountId: source.account_id, document_id: id });
      },
    },

    removeSourceDocument: {
      rest: "DELETE /knowledge/:knowledge_source_id/documents/:document_id",
      summary: "Delete an uploaded document (at once)",
      params: { ...idParam, ...documentIdParam },
      response: NO_CONTENT,
      async handler(ctx: Ctx<{ knowledge_source_id: number; document_id: string }>) {
        const source = await this.findChangeableSource(ctx, ctx.params.knowledge_source_id);
        mustTakeUploads(source);
        const existing = await this.sourceDocument(ctx, source, ctx.params.document_id);
        await ctx.call("search.removeDocuments", { accountId: source.account_id, sourceId: source._id, urls: [existing.url] });
        await this.recordUploadCounts(ctx, source);
        return respondNoContent(ctx);
      },
    },

    // The document index routes: /knowledge is this service's URL; the search service answers them.
    searchDocuments: searchRoute("searchDocuments", "POST /knowledge/documents/search", "Search the account's documents (semantic, keyword or hybrid)", searchDocumentsParams, DocumentSearch.one()),
    listDocuments: searchRoute("listDocuments", "GET /knowledge/documents", "List the account's indexed documents", listDocumentsParams, DocumentSummary.page()),
    documentStats: searchRoute("documentStats", "GET /knowledge/documents/stats", "Statistics of the account's search index", undefined, DocumentStats.one()),
    getDocument: searchRoute("getDocument", "GET /knowledge/documents/:document_id", "Get a document with its full content", documentIdParam, DocumentDetail.one()),
    deleteDocument: searchRoute("deleteDocument", "DELETE /knowledge/documents/:document_id", "Delete a document (queued; poll until 404)", documentIdParam, Queued.one()),
    searchSources: searchRoute("searchSources", "POST /knowledge/search", "Search knowledge sources' content (source-level results)", searchSourcesParams, SourceSearch.one()),
  },

  events: {
    /** A document the account index's DELETE removed (an upload or a load records its source's count itself). */
    "search.documentRemoved": {
      params: { accountId: "number", sourceId: "number" },
      handler(ctx: Ctx<{ accountId: number; sourceId: number }>) {
        return this.recordDocumentCount(ctx, ctx.params.accountId, ctx.params.sourceId);
      },
    },
  },

  methods: {
    findSource(ctx, id) {
      return this.findOwned(ctx, this.models.sources, id, "Knowledge source");
    },

    /** A source a request may change: 409 once its deletion is queued (GET still answers until the job ends). */
    async findChangeableSource(ctx, id) {
      const source = await this.findSource(ctx, id);
      if (source.deleting) throw ERRORS.conflict(`Knowledge source ${id} is being deleted`);
      return source as Awaited<ReturnType<Methods["findChangeableSource"]>>;
    },

    queueLoad(source, force) {
      return enqueueJob(this.models.jobs, { kind: "load", account_id: source.account_id, knowledge_source_id: source._id, force });
    },

    /** A document of this source: 404 when it is absent or another source's (the search service checks the account). */
    async sourceDocument(ctx, source, documentId) {
      const doc = (await ctx.call("search.getDocument", { accountId: source.account_id, document_id: documentId })) as { id: string; url: string; source_id: number; deletion_job_id: string | null };
      if (doc.source_id !== source._id || doc.deletion_job_id) throw ERRORS.notFound("Document", documentId);
      return doc;
    },

    /**
     * Indexes one uploaded document (chunks, keyword index at once, vectors queued) and records the source's new
     * counts. A deletion of the source queued meanwhile may have purged its documents already: the source's are
     * removed again, all of them and from the index by source (the purge may have run between this document's
     * record and its index entries, leaving entries no record names), and the answer is the 409 a request after the
     * DELETE gets, so no document outlives its source.
     */
    async indexUpload(ctx, source, url, doc) {
      const counts = (await ctx.call("search.indexDocuments", {
        accountId: source.account_id,
        sourceId: source._id,
        documents: [{ url, title: doc.title, content: doc.content, metadata: doc.metadata, sections: doc.sections }],
        chunking: plainChunking(source.chunking),
      })) as { document_ids: string[] };
      if (!(await this.recordUploadCounts(ctx, source))) {
        await ctx.call("search.deleteSourceDocuments", { accountId: source.account_id, sourceId: source._id });
        throw ERRORS.conflict(`Knowledge source ${source._id} is being deleted`);
      }
      return counts.document_ids[0]!;
    },

    /**
     * The source's document count and index time after an upload changed its documents: a knowledge_source.updated
     * event. False, with nothing recorded, when the source's deletion is queued or done.
     */
    async recordUploadCounts(ctx, source) {
      const key = { _id: source._id, account_id: source.account_id };
      const count = (await ctx.call("search.countDocuments", { accountId: source.account_id, sourceId: source._id })) as number;
      const now = new Date();
      const fields = { document_count: count, last_indexed_at: now, loading_status: "loaded", loaded_at: now, loading_error: null };
      const recorded = await this.recordChange(changeOf("knowledge_source.updated", KNOWLEDGE_SOURCES_COLLECTION, key), async () => {
        const updated = await this.models.sources.findOneAndUpdate({ ...key, deleting: { $ne: true } }, { $set: fields }, { returnDocument: "after" });
        // Nothing changed: the update's event is dropped with the error (lib/events.mixin.ts settleFailedWrite).
        if (!updated) throw SOURCE_BEING_DELETED;
        return updated.toJSON();
      }).catch((err) => (err === SOURCE_BEING_DELETED ? null : Promise.reject(err)));
      return recorded !== null;
    },

    /** The source's document_count as the index now holds it, with a knowledge_source.updated event when it changed. */
    async recordDocumentCount(ctx, accountId, sourceId) {
      const key = { _id: sourceId, account_id: accountId };
      const [source, count] = await Promise.all([
        this.models.sources.findOne(key, { document_count: 1, deleting: 1 }).lean<KnowledgeSourceRecord>(),
        ctx.call("search.countDocuments", { accountId, sourceId }) as Promise<number>,
      ]);
      if (!source || source.deleting || source.document_count === count) return;
      await this.recordChange(changeOf("knowledge_source.updated", KNOWLEDGE_SOURCES_COLLECTION, key), async () => {
        const updated = await this.models.sources.findOneAndUpdate(key, { $set: { document_count: count } }, { returnDocument: "after" });
        return updated?.toJSON() ?? { id: sourceId };
      });
    },
  },

  created() {
    this.secrets = secretBox(configOf(this).secretsKey);
  },
};

export default KnowledgeService;
