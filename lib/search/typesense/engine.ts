import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, Errors } from "typesense";
import { fuseLists } from "../fusion";
import { MAX_DEPTH, type ChunkHit, type IndexQuery, type IndexResult, type IndexStats, type IndexedChunk, type SearchIndex } from "../port";
import { terms } from "../tokenizer";
import { FLAT_SEARCH_CUTOFF } from "../vectors";
import { Batch, type Hit, type Search, type SearchResult } from "./batch";
import { filterBy, metadataUpdate } from "./filters";
import { readsMetadata } from "../filters";
import { HIT_FIELDS, keywordCandidates, termStatistics, TotalsCache, type KeywordHit, type KeywordScope, type TermStatistics } from "./keyword";
import {
  checkCollection,
  chunkDocument,
  collectionNames,
  createCollection,
  isSupportedTypesenseVersion,
  MIN_TYPESENSE_VERSION,
  quoteList,
  schemas,
  vectorCollectionName,
  vectorDocument,
  vectorSchema,
  type ChunkDocument,
  type CollectionNames,
  type ReplacementDocument,
  type VectorDocument,
} from "./schema";

export { isSupportedTypesenseVersion, MIN_TYPESENSE_VERSION } from "./schema";

/** Ids per delete-by-filter or read-by-id request, to keep filter strings short. */
const ID_BATCH = 100;
/** Typesense's default cap on searches in one multi_search request (limit_multi_searches). */
const MULTI_SEARCH_LIMIT = 50;
/**
 * replaceChunks waits this long between changing what is hidden and writing or deleting chunks, so a search
 * that read the hidden list before the change has read its candidates too (see replaceChunks).
 */
const REPLACE_GRACE_MS = 500;
/**
 * Nearest vectors a hybrid query reads, as a share of its depth (semantic reads the whole depth). A vector hit
 * is a read of a stored 384-1536-d vector document, the dearest hit there is; fusion weighs the vector rank r
 * by alpha/(r+1), so the list's second half moves few results (SciFact hybrid nDCG@10 at depth 100: 0.709 with
 * the whole depth, 0.713 with half; docs/search.md decision 39).
 */
export const HYBRID_VECTOR_HITS = 0.5;
/** Requests the keyword candidates of a query are split over, run side by side (Typesense answers a request on one thread). */
const KEYWORD_REQUESTS = 2;
/**
 * Typesense gzips a response when the client accepts it (axios does by default): a query's hits are 0.2-0.5 MB
 * of JSON, and compressing and inflating them cost more CPU than sending them over the local or cluster network
 * (SciFact keyword: typesense 17.1 -> 13.8 ms, node 10 -> 7 ms per query; ADR 0049).
 */
export const UNCOMPRESSED = { "Accept-Encoding": "identity" };
/**
 * How long a collection's field names are reused by filtered queries. This engine's writes clear them at once; a
 * metadata name or type that first appears through another replica is filterable after at most this long.
 */
const FIELDS_TTL_MS = 1000;

/** Which fields of stored chunk documents a read returns. */
type ChunkRead = { include_fields: string } | { exclude_fields: string };
/** Everything but the terms: a vector document copies what a hit shows and what filters read. */
const FOR_VECTORS: ChunkRead = { exclude_fields: "title_terms,content_terms" };
/** What a metadata change reads: the document, indexed_at and the metadata fields (the text left out). */
const FOR_METADATA: ChunkRead = { exclude_fields: "title_terms,content_terms,content,title,url" };
const IDS_ONLY: ChunkRead = { include_fields: "id" };
/** A replacement whose writer died half-way stops hiding anything after this long. */
const REPLACEMENT_TTL_MS = 10 * 60_000;

/** Where a query's searches look (see TypesenseEngine.scopes): keyword statistics and candidates, nearest vectors. */
interface Scopes {
  keyword: KeywordScope;
  vectors: string;
}

export interface TypesenseEngineOptions {
  url: string;
  apiKey: string;
  /** The alias searches read vectors through (TYPESENSE_COLLECTION); the other collections are named after it. */
  collection: string;
  dimensions: number;
  /** The embedding model: its vectors collection is named after it and its dimensions. */
  model?: string;
  /** The stored vectors are of another model: fill this model's vectors collection while the current one answers. */
  switchingModel?: boolean;
}







/**
 * Production engine: shared Typesense collections for all accounts, every request filtered by account_id
 * in one place (scope()). The platform analyses text (tokenizer.terms: folding, stop words, Porter2 stems);
 * Typesense stores and matches those terms in the chunks collection and holds vectors in a collection of
 * their own (one per embedding model, behind the TYPESENSE_COLLECTION alias). A query (docs/search.md
 * decision 39, ADR 0049) reads the nearest vectors with what their hits show (half the depth for hybrid) in
 * one multi_search, and meanwhile each query term's document frequency in the account (no hit read; and in
 * the query's scope when it names sources or a metadata filter), then each matching term's best candidates in
 * the scope (a budget of 2 x depth hits shared by idf) with their terms and what a hit shows, in two
 * multi_search requests side by side; every request of hits is led by the replacements.
 * The platform ranks the candidates by BM25 with the account's statistics (cached briefly) and fuses the
 * lists with fuseLists, as the embedded engine does. Vectors come later from the embedding stage.
 */
export class TypesenseEngine implements SearchIndex {
  readonly engine = "typesense" as const;
  private readonly client: Client;
  private readonly names: CollectionNames;
  private readonly totals = new TotalsCache();
  private readonly fields = new Map<string, { names: Set<string>; at: number }>();
  /** Counts forgetFields() calls: field names read before a write are not kept after it. */
  private fieldsGeneration = 0;
  /** The vectors collection every vector write goes to: the configured model's (searches read the alias). */
  private target: string;
  /** During a model switch, the vectors collection the alias still names: it takes deletes, no new vectors. */
  private previous?: string;

  constructor(private readonly options: TypesenseEngineOptions) {
    this.client = new Client({
      nodes: [{ url: options.url }] as never,
      apiKey: options.apiKey,
      connectionTimeoutSeconds: 10,
      numRetries: 2,
      logLevel: "warn",
      additionalHeaders: UNCOMPRESSED,
    });
    this.names = collectionNames(options.collection);
    this.target = vectorCollectionName(options.collection, options.model, options.dimensions);
  }

  async start() {
    const { version } = (await this.client.debug.retrieve()) as { version?: string };
    if (version && !isSupportedTypesenseVersion(version)) {
      throw new Error(`Typesense ${version} at ${this.options.url} is not supported: needs ${MIN_TYPESENSE_VERSION} or later`);
    }
    for (const schema of Object.values(schemas(this.names))) await createCollection(this.client, schema);
    const current = await this.servingVectors();
    const own = this.target;
    if (current === undefined) {
      await createCollection(this.client, vectorSchema(own, this.options.dimensions));
      await this.client.aliases().upsert(this.options.collection, { collection_name: own });
    } else if (!this.options.switchingModel || current === own) {
      // No switch (or one whose alias already moved before a crash): the collection searched is written.
      this.target = current;
      await checkCollection(this.client, vectorSchema(current, this.options.dimensions));
    } else {
      this.previous = current;
      await createCollection(this.client, vectorSchema(own, this.options.dimensions));
    }
  }

  /** The vectors collection the alias names, or undefined before the first start. */
  private async servingVectors(): Promise<string | undefined> {
    const named = await this.aliasTarget();
    if (named) return named;
    try {
      await this.client.collections(this.options.collection).retrieve();
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
      return undefined;
    }
    // A retrieve by name goes through an alias: one that another replica starting at the same time has just named.
    const namedMeanwhile = await this.aliasTarget();
    if (namedMeanwhile) return namedMeanwhile;
    throw new Error(`Typesense collection ${this.options.collection} is of the one-collection layout (before 2026-11-24): drop it (MongoDB holds every chunk) or set TYPESENSE_COLLECTION`);
  }

  private async aliasTarget(): Promise<string | undefined> {
    try {
      return ((await this.client.aliases(this.options.collection).retrieve()) as { collection_name: string }).collection_name;
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
      return undefined;
    }
  }

  /** Copies chunks' vectors of the new model into its collection during a model switch (text is shared). */
  async copyForModelSwitch(chunks: IndexedChunk[]) {
    await this.importVectors(chunks);
    this.forgetFields();
  }

  /**
   * Ends a model switch: the alias names the new model's vectors collection (one request: every replica's
   * next search reads it), and the previous one is dropped.
   */
  async finishModelSwitch() {
    const previous = this.previous;
    if (!previous) return;
    await this.client.aliases().upsert(this.options.collection, { collection_name: this.target });
    this.forgetFields();
    this.previous = undefined;
    await this.client.collections(previous).delete();
  }

  async stop() {}

  /** The tenant filter every read and delete carries. */
  private scope(accountId: number, sourceIds?: number[]): string {
    if (!Number.isInteger(accountId)) throw new Error("account id must be an integer");
    const parts = [`account_id:=${accountId}`];
    if (sourceIds) parts.push(`source_id:[${sourceIds.filter(Number.isInteger).join(",") || "-1"}]`);
    return parts.join(" && ");
  }

  /**
   * Where a query looks: keyword statistics in the account; keyword candidates and nearest vectors in its
   * sources and metadata filter (ADR 0058) inside the tenant filter. Chunk and vector documents both carry the
   * filter's fields, so each list ranks matching chunks only.
   */
  private async scopes(q: IndexQuery): Promise<Scopes> {
    const account = this.scope(q.accountId);
    const sources = this.scope(q.accountId, q.sourceIds);
    // Only a metadata comparison asks which fields exist: built-in keys are declared fields.
    const [chunkFields, vectorFields] = q.filter && readsMetadata(q.filter) ? await Promise.all([this.fieldsOf(this.names.chunks), this.fieldsOf(this.names.vectors)]) : [];
    const within = (fields?: Set<string>) => (q.filter ? `${sources} && ${filterBy(q.filter, (f) => fields!.has(f))}` : sources);
    return { keyword: { accountId: q.accountId, collection: this.names.chunks, account, scoped: within(chunkFields) }, vectors: within(vectorFields) };
  }

  /**
   * A collection's field names (the vectors alias names one): a filter must not name a metadata field no
   * document has created (see filterBy). Reused for FIELDS_TTL_MS, dropped by this engine's writes that may create one.
   */
  private async fieldsOf(collection: string): Promise<Set<string>> {
    const cached = this.fields.get(collection);
    if (cached && Date.now() - cached.at < FIELDS_TTL_MS) return cached.names;
    const generation = this.fieldsGeneration;
    const retrieved = (await this.client.collections(collection).retrieve()) as unknown as { fields: { name: string }[] };
    const names = new Set(retrieved.fields.map((f) => f.name));
    // Fields read before a write of this engine may lack the ones it created: used once, not kept.
    if (generation === this.fieldsGeneration) this.fields.set(collection, { names, at: Date.now() });
    return names;
  }

  private forgetFields() {
    this.fields.clear();
    this.fieldsGeneration++;
  }

  /**
   * After a write of these documents: the field names read before it stay good unless it set a metadata field
   * that one of the collections may not have had (steady loading of documents with the same names keeps them).
   */
  private forgetFieldsIfNew(docs: object[]) {
    const known = [this.fields.get(this.names.chunks)?.names, this.fields.get(this.names.vectors)?.names];
    const created = (field: string) => field.startsWith("meta_") && !known.every((names) => names?.has(field));
    if (docs.some((doc) => Object.entries(doc).some(([field, value]) => value !== null && created(field)))) this.forgetFields();
  }

  private documents<D extends { id: string }>(collection: string) {
    return this.client.collections<D>(collection).documents();
  }

  /** Runs searches in as few multi_search requests as Typesense accepts (one, unless a query has many terms). */
  private async multi<D = unknown>(searches: Search[]): Promise<SearchResult<D>[]> {
    const batches: Search[][] = [];
    for (let i = 0; i < searches.length; i += MULTI_SEARCH_LIMIT) batches.push(searches.slice(i, i + MULTI_SEARCH_LIMIT));
    const answers = await Promise.all(
      batches.map((searches) => this.client.multiSearch.perform({ searches } as never) as unknown as Promise<{ results: SearchResult<D>[] }>),
    );
    const results = answers.flatMap((a) => a.results);
    for (const r of results) if (r.error) throw new Error(`Typesense search failed: ${r.error}`);
    return results;
  }

  private async run(batch: Batch) {
    batch.results = batch.searches.length ? await this.multi(batch.searches) : [];
  }

  /** The chunks (of those given) that are in the index, with what a hit shows and what filters read. */
  private async existing(accountId: number, ids: string[], read: ChunkRead = FOR_VECTORS): Promise<Map<string, ChunkDocument>> {
    const searches: Search[] = [];
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      const part = ids.slice(i, i + ID_BATCH);
      searches.push({ collection: this.names.chunks, q: "*", filter_by: `${this.scope(accountId)} && id:${quoteList(part)}`, ...read, per_page: part.length });
    }
    const found = new Map<string, ChunkDocument>();
    for (const r of searches.length ? await this.multi<ChunkDocument>(searches) : []) {
      for (const h of r.hits ?? []) found.set(h.document.id, h.document);
    }
    return found;
  }

  private async deleteByIds(collection: string, accountId: number, ids: string[]) {
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      await this.documents(collection).delete({ filter_by: `${this.scope(accountId)} && id:${quoteList(ids.slice(i, i + ID_BATCH))}` });
    }
  }

  async upsertChunks(chunks: IndexedChunk[]) {
    if (!chunks.length) return;
    const documents = chunks.map(chunkDocument);
    await this.documents<ChunkDocument>(this.names.chunks).import(documents, { action: "upsert" });
    await this.importVectors(chunks);
    // A chunk is upserted whole: one without a vector has none of this model, whatever it had before.
    const withoutVector = new Map<number, string[]>();
    for (const c of chunks) if (!c.vector) withoutVector.set(c.accountId, [...(withoutVector.get(c.accountId) ?? []), c.id]);
    for (const [accountId, ids] of withoutVector) await this.deleteByIds(this.target, accountId, ids);
    for (const c of chunks) this.totals.forget(c.accountId);
    // Vector documents carry the chunk's metadata fields.
    this.forgetFieldsIfNew(documents);
  }

  private async importVectors(chunks: IndexedChunk[]) {
    const vectors: VectorDocument[] = chunks.flatMap((c) => (c.vector ? [vectorDocument(chunkDocument(c), c.vector)] : []));
    if (vectors.length) await this.documents<VectorDocument>(this.target).import(vectors, { action: "upsert" });
  }

  /**
   * Swaps versions so that a searcher sees the old chunks or the new ones, never neither nor both. Typesense
   * 0.24 changes one document atomically, not several, so a replacement document names the chunks searches
   * must skip: first the new ones, then (one write, the switch) the stale ones, which are then deleted. A
   * search reads the replacements first in its multi_search; the waits keep any search that read the list
   * before a change from seeing chunks written or deleted after it. Chunks kept unchanged (same id) are
   * never hidden.
   */
  async replaceChunks(accountId: number, chunks: IndexedChunk[], staleIds: string[]) {
    if (chunks.some((c) => c.accountId !== accountId)) throw new Error(`replaceChunks: a chunk of another account than ${accountId}`);
    if (!staleIds.length) return this.upsertChunks(chunks);
    const existing = await this.existing(accountId, chunks.map((c) => c.id), IDS_ONLY);
    const replacement: ReplacementDocument = {
      id: randomUUID(),
      account_id: accountId,
      hidden: chunks.map((c) => c.id).filter((id) => !existing.has(id)),
      expires_at: Date.now() + REPLACEMENT_TTL_MS,
    };
    const replacements = this.documents<ReplacementDocument>(this.names.replacements);
    await replacements.upsert(replacement);
    await sleep(REPLACE_GRACE_MS);
    await this.upsertChunks(chunks);
    await replacements.upsert({ ...replacement, hidden: staleIds });
    await sleep(REPLACE_GRACE_MS);
    await this.deleteChunks(accountId, staleIds);
    await this.client.collections(this.names.replacements).documents(replacement.id).delete();
  }

  async setVectors(accountId: number, vectors: { id: string; vector: Float32Array }[]) {
    if (!vectors.length) return;
    // Only chunks of this account that still exist get a vector (a chunk deleted meanwhile is simply gone).
    const chunks = await this.existing(accountId, vectors.map((v) => v.id));
    const present = vectors.filter((v) => chunks.has(v.id));
    if (!present.length) return;
    const documents = present.map((v) => vectorDocument({ ...chunks.get(v.id)!, account_id: accountId }, v.vector));
    await this.documents<VectorDocument>(this.target).import(documents, { action: "upsert" });
    this.forgetFieldsIfNew(documents);
  }

  /** The vectors collections a delete goes to: the model's, and during a switch the one still searched. */
  private vectorCollections(): string[] {
    return this.previous ? [this.target, this.previous] : [this.target];
  }

  async deleteChunks(accountId: number, ids: string[]) {
    await this.deleteByIds(this.names.chunks, accountId, ids);
    for (const collection of this.vectorCollections()) await this.deleteByIds(collection, accountId, ids);
    this.totals.forget(accountId);
  }

  /**
   * A Typesense update per chunk (the fields of its old metadata names nulled, the new ones set), vectors first:
   * a chunk document then never names fewer old metadata names than its vector documents, so a retry after a
   * failure clears them all. A vector document also takes the chunk's indexed_at, which vectors written before
   * filters lack (so this call makes a chunk from before them filterable on every list).
   */
  async setDocumentMetadata(accountId: number, documentId: string, chunkIds: string[], metadata: Record<string, unknown> | null) {
    const chunks = [...(await this.existing(accountId, chunkIds, FOR_METADATA)).values()].filter((c) => c.document_id === documentId);
    if (!chunks.length) return;
    const updates = chunks.map((c) => ({ id: c.id, ...metadataUpdate(c, metadata) }));
    const vectorUpdates = chunks.map((c, i) => ({ ...updates[i]!, indexed_at: c.indexed_at }));
    for (const collection of this.vectorCollections()) await this.updateExisting(collection, vectorUpdates);
    await this.updateExisting(this.names.chunks, updates);
    this.forgetFieldsIfNew(updates);
  }

  /** Typesense `update`s of documents that may be gone: a chunk without a vector, or one deleted meanwhile, has none to update. */
  private async updateExisting(collection: string, updates: { id: string }[]) {
    const results = (await this.documents(collection).import(updates, { action: "update", throwOnFail: false } as never)) as unknown as { success: boolean; code?: number; error?: string }[];
    const failed = results.find((r) => !r.success && r.code !== 404);
    if (failed) throw new Error(`Typesense update of ${collection} failed: ${failed.error}`);
  }

  async deleteSource(accountId: number, sourceId: number) {
    await this.documents(this.names.chunks).delete({ filter_by: this.scope(accountId, [sourceId]) });
    for (const collection of this.vectorCollections()) await this.documents(collection).delete({ filter_by: this.scope(accountId, [sourceId]) });
    this.totals.forget(accountId);
  }

  /** Chunks hidden by replacements in progress in the account. */
  private replacementSearch(accountId: number): Search {
    return {
      collection: this.names.replacements,
      q: "*",
      filter_by: `${this.scope(accountId)} && expires_at:>${Date.now()}`,
      include_fields: "hidden",
      per_page: MAX_DEPTH,
    };
  }

  /**
   * The reads of hits. Each multi_search is led by the replacements: a replacement switching after that read
   * cannot have written or deleted chunks before the reads after it in the same request (see replaceChunks).
   * Typesense runs a request's searches one after the other and requests side by side, so the nearest
   * vectors go at once in a request of their own, and the keyword candidates, once the statistics have sized
   * them, in KEYWORD_REQUESTS requests at once. All must have seen the same replacements, all within the
   * grace (each state of a replacement lasts the grace at least, so equal reads less than a grace apart saw
   * no switch between them); else everything is read again in one request.
   */
  private async readHits(
    q: IndexQuery,
    where: Scopes,
    perPage: number,
    wantsVectors: boolean,
    statistics?: () => Promise<TermStatistics>,
  ): Promise<{ hidden: Set<string>; keyword?: (hidden: Set<string>) => KeywordHit[]; nearest: Hit<VectorDocument>[] }> {
    const started = Date.now();
    const lead = (batch: Batch) => batch.add<Pick<ReplacementDocument, "hidden">>(this.replacementSearch(q.accountId));
    const vectors = new Batch();
    const heads = [lead(vectors)];
    const nearest = wantsVectors ? vectors.add<VectorDocument>(this.vectorSearch(q, where.vectors, perPage)) : undefined;
    const vectorsRead = wantsVectors ? this.run(vectors) : undefined;
    // Awaited below; a failure while the statistics are still out must not count as unhandled.
    vectorsRead?.catch(() => undefined);
    const stats = statistics ? await statistics() : undefined;
    const groups = Array.from({ length: KEYWORD_REQUESTS }, () => new Batch());
    const groupHeads = groups.map(lead);
    const keyword = stats ? keywordCandidates(groups, where.keyword, stats, perPage) : undefined;
    const used = groups.filter((b) => b.searches.length > 1);
    await Promise.all([vectorsRead, ...used.map((b) => this.run(b))]);
    const seen = [...(wantsVectors ? heads : []), ...used.map((b) => groupHeads[groups.indexOf(b)]!)].map((r) =>
      (r().hits ?? []).flatMap((h) => h.document.hidden ?? []).sort().join(" "),
    );
    if (seen.some((h) => h !== seen[0]) || Date.now() - started > REPLACE_GRACE_MS) {
      const together = new Batch();
      const head = lead(together);
      const again = wantsVectors ? together.add<VectorDocument>(this.vectorSearch(q, where.vectors, perPage)) : undefined;
      const rank = stats ? keywordCandidates([together], where.keyword, stats, perPage) : undefined;
      await this.run(together);
      return { hidden: new Set((head().hits ?? []).flatMap((h) => h.document.hidden ?? [])), keyword: rank, nearest: again?.().hits ?? [] };
    }
    return { hidden: new Set(seen[0] ? seen[0].split(" ") : []), keyword, nearest: nearest?.().hits ?? [] };
  }

  /** The first round of a keyword search: the account's statistics of the query's terms (see termStatistics). */
  private async termStatistics(where: KeywordScope, queryTerms: string[]) {
    const batch = new Batch();
    const statistics = termStatistics(batch, this.totals, where, queryTerms);
    await this.run(batch);
    return statistics();
  }

  private vectorSearch(q: IndexQuery, filter_by: string, perPage: number): Search {
    return {
      collection: this.names.vectors,
      q: "*",
      filter_by,
      // Scopes (a filter, or a small tenant) of fewer matching vectors are ranked exactly, as the embedded engine
      // scans the allowed slots below the same cutoff; HNSW's filtered search may miss some of them.
      vector_query: `embedding:([${Array.from(q.vector!).join(",")}], k:${perPage}, flat_search_cutoff:${FLAT_SEARCH_CUTOFF})`,
      include_fields: HIT_FIELDS,
      per_page: q.mode === "hybrid" ? Math.ceil(perPage * HYBRID_VECTOR_HITS) : perPage,
    };
  }

  async search(q: IndexQuery): Promise<IndexResult> {
    const perPage = Math.min(q.depth, MAX_DEPTH);
    const queryTerms = [...new Set(terms(q.text))];
    const wantsVectors = q.mode !== "keyword" && q.vector !== null;
    const keywordNeeded = q.mode !== "semantic" || !wantsVectors;
    const where = await this.scopes(q);
    // The nearest vectors at once; meanwhile the terms' statistics (no hit read), which size each term's
    // candidate list, then the candidates (see readHits).
    const read = await this.readHits(q, where, perPage, wantsVectors, keywordNeeded && queryTerms.length ? () => this.termStatistics(where.keyword, queryTerms) : undefined);
    let { hidden, keyword } = read;
    const vectorHits = read.nearest.filter((h) => !hidden.has(h.document.id));
    // Typesense returns the k nearest whatever their distance: none at all means no vector in scope.
    const modeUsed = vectorHits.length ? q.mode : "keyword";
    if (modeUsed === "keyword" && !keywordNeeded && queryTerms.length) {
      // Semantic without a vector in scope answers as keyword: both rounds of it.
      ({ hidden, keyword } = await this.readHits(q, where, perPage, false, () => this.termStatistics(where.keyword, queryTerms)));
    }
    const ranked = modeUsed !== "semantic" && keyword ? keyword(hidden) : [];
    const vector = modeUsed !== "keyword" ? vectorHits.filter((h) => h.vector_distance! <= q.maxDistance) : [];

    if (modeUsed === "keyword") return { modeUsed, hits: ranked.map((k) => toChunkHit(k.document, k.score, { textScore: k.score })) };
    if (modeUsed === "semantic") {
      return { modeUsed, hits: vector.map((h) => toChunkHit(h.document, 1 - h.vector_distance!, { vectorDistance: h.vector_distance! })) };
    }
    const documents = new Map<string, HitDocument>();
    for (const k of ranked) documents.set(k.id, k.document);
    for (const h of vector) documents.set(h.document.id, h.document);
    const fused = fuseLists(ranked, vector.map((h) => ({ id: h.document.id, distance: h.vector_distance! })), q.alpha);
    return {
      modeUsed,
      hits: fused.slice(0, q.depth).map((f) => toChunkHit(documents.get(f.id)!, f.score, { textScore: f.textScore, vectorDistance: f.distance })),
    };
  }

  async countDocuments(accountId: number, sourceId?: number) {
    const [r] = await this.multi([
      { collection: this.names.chunks, q: "*", filter_by: this.scope(accountId, sourceId === undefined ? undefined : [sourceId]), group_by: "document_id", group_limit: 1, per_page: 1 },
    ]);
    return r!.found;
  }

  async stats(accountId: number, sourceId?: number): Promise<IndexStats> {
    const filter_by = this.scope(accountId, sourceId === undefined ? undefined : [sourceId]);
    const collection = this.names.chunks;
    const [chunks, vectors, documents] = await this.multi([
      { collection, q: "*", filter_by, per_page: 0, facet_by: "content_bytes", max_facet_values: 1 },
      // Vectors of the configured model: during a model switch the alias names the previous model's.
      { collection: this.target, q: "*", filter_by, per_page: 0 },
      { collection, q: "*", filter_by, group_by: "document_id", group_limit: 1, per_page: 1 },
    ]);
    const contentBytes = chunks!.facet_counts?.find((f) => f.field_name === "content_bytes")?.stats?.sum ?? 0;
    return {
      documents: documents!.found,
      chunks: chunks!.found,
      vectors: vectors!.found,
      sizeBytes: Math.round(contentBytes + vectors!.found * this.options.dimensions * 4),
    };
  }

  /** Drops the alias and every collection named after it that this engine knows (tests use collections of their own). */
  async dropCollection() {
    const serving = await this.servingVectors().catch(() => this.options.collection);
    const collections = new Set([this.names.chunks, this.names.replacements, this.target, ...this.vectorCollections(), ...(serving ? [serving] : [])]);
    const drops = [() => this.client.aliases(this.options.collection).delete(), ...[...collections].map((c) => () => this.client.collections(c).delete())];
    for (const drop of drops) {
      try {
        await drop();
      } catch (err) {
        if (!(err instanceof Errors.ObjectNotFound)) throw err;
      }
    }
  }
}

/** What a keyword candidate and a vector hit both carry. */
type HitDocument = Pick<ChunkDocument, "id" | "source_id" | "document_id" | "position" | "title" | "url" | "content" | "chunk_start" | "chunk_end">;

function toChunkHit(d: HitDocument, score: number, extra: { textScore?: number; vectorDistance?: number }): ChunkHit {
  return {
    id: d.id,
    sourceId: d.source_id,
    documentId: d.document_id,
    position: d.position,
    title: d.title ?? "",
    url: d.url ?? "",
    content: d.content ?? "",
    chunkStart: d.chunk_start ?? null,
    chunkEnd: d.chunk_end ?? null,
    score,
    ...(extra.vectorDistance !== undefined ? { vectorDistance: extra.vectorDistance } : {}),
    ...(extra.textScore !== undefined ? { textScore: extra.textScore } : {}),
  };
}
