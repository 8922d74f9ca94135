import { Client, Errors } from "typesense";
import { bm25Idf, bm25Term, TITLE_WEIGHT } from "./bm25";
import { fuseLists } from "./fusion";
import type { ChunkHit, IndexQuery, IndexResult, IndexStats, IndexedChunk, SearchIndex } from "./port";
import { terms } from "./tokenizer";

/**
 * Typesense versions this engine runs on: 0.24.1 (tested in CI) and later. It uses only what 0.24 already
 * has (documents import, multi_search, filter_by, group_by, facet stats, `vector_query` with `k` on a
 * float[] field) and none of the later additions (stop-word sets, stemming, native hybrid search, distance
 * thresholds), which the platform does itself, so results are the same on every version.
 */
export const MIN_TYPESENSE_VERSION = "0.24.1";
/** Ids per delete-by-filter request, to keep filter strings short. */
const DELETE_BATCH = 100;
/**
 * Keyword candidates fetched per query term: all `depth` for queries of up to three terms (exact BM25 top
 * list whenever a term's matches fit in it), fewer for long queries, never under this floor. Typesense
 * reads every returned chunk from its store, so returned hits, not matching, are what a query costs.
 */
const MIN_CANDIDATES_PER_TERM = 50;
const FULL_CANDIDATE_TERMS = 3;

/** Typesense's default cap on searches in one multi_search request (limit_multi_searches). */
const MULTI_SEARCH_LIMIT = 50;

export interface TypesenseEngineOptions {
  url: string;
  apiKey: string;
  /** What searches read: an alias of the embedding model's collection (or, from before aliases, the collection). */
  collection: string;
  dimensions: number;
  /** The embedding model: a new deployment's collection is named after it and its dimensions. */
  model?: string;
  /** The stored vectors are of another model: fill this model's collection while the current one answers. */
  switchingModel?: boolean;
}

/** The fields a chunk has in the shared collection. */
interface ChunkDocument {
  id: string;
  account_id: number;
  source_id: number;
  document_id: string;
  position: number;
  title: string;
  url: string;
  content: string;
  /** The platform's index terms (tokenizer.terms) of title and content, space-separated: what Typesense matches. */
  title_terms: string;
  content_terms: string;
  /** BM25 length of the chunk: title terms count TITLE_WEIGHT times (as in the embedded engine). */
  term_count: number;
  content_bytes: number;
  embedding?: number[];
  has_vector: boolean;
  indexed_at: number;
}

interface Hit {
  document: ChunkDocument;
  text_match?: number;
  vector_distance?: number;
}

interface SearchResult {
  found: number;
  hits?: Hit[];
  facet_counts?: { field_name: string; stats?: { sum?: number } }[];
  error?: string;
  code?: number;
}

/** What a hit shows; keyword candidates also bring their terms and length for BM25. */
const HIT_FIELDS = "id,source_id,document_id,position,title,url,content";
const CANDIDATE_FIELDS = `${HIT_FIELDS},title_terms,content_terms,term_count`;

/** Typesense filter value for a list of strings (backticks quote ids safely). */
function quoteList(values: string[]): string {
  return `[${values.map((v) => `\`${v.replace(/`/g, "")}\``).join(",")}]`;
}

/** "0.24.1" -> [0, 24, 1]; a build without a numeric version (nightly) sorts last. */
function versionParts(version: string): number[] {
  const parts = version.replace(/^v/, "").split(/[.-]/).slice(0, 3).map(Number);
  return parts.every(Number.isFinite) ? parts : [Number.MAX_SAFE_INTEGER];
}

export function isSupportedTypesenseVersion(version: string): boolean {
  const have = versionParts(version);
  const want = versionParts(MIN_TYPESENSE_VERSION);
  for (let i = 0; i < want.length; i++) {
    if ((have[i] ?? 0) !== want[i]) return (have[i] ?? 0) > want[i]!;
  }
  return true;
}

/** The BM25 length and term frequencies of a chunk, from its stored terms, as the embedded index counts them. */
function termFrequencies(d: Pick<ChunkDocument, "title_terms" | "content_terms">): Map<string, number> {
  const tf = new Map<string, number>();
  for (const t of d.title_terms.split(" ")) if (t) tf.set(t, (tf.get(t) ?? 0) + TITLE_WEIGHT);
  for (const t of d.content_terms.split(" ")) if (t) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}

/**
 * Production engine: one shared Typesense collection for all accounts, every request filtered by
 * account_id in one place (scope()). The platform analyses text (tokenizer.terms: folding, stop words,
 * Porter2 stems) and Typesense stores and matches those terms; Typesense finds the keyword candidates and
 * the nearest vectors (both lists in one multi_search), and the platform ranks keyword candidates by BM25
 * with the account's statistics and fuses the lists with fuseLists, exactly as the embedded engine does.
 * Vectors are precomputed by the embedding stage and added by partial update.
 */
export class TypesenseEngine implements SearchIndex {
  readonly engine = "typesense" as const;
  private readonly client: Client;
  /** The collection every write goes to: the configured model's (searches read the alias). */
  private target: string;
  /** During a model switch, the collection the alias still points at: it takes text writes and deletes, no vectors. */
  private previous?: string;

  constructor(private readonly options: TypesenseEngineOptions) {
    this.client = new Client({
      nodes: [{ url: options.url }] as never,
      apiKey: options.apiKey,
      connectionTimeoutSeconds: 10,
      numRetries: 2,
      logLevel: "warn",
    });
    this.target = options.collection;
  }

  /** The collection schema: analysed terms for matching, stored text for hits, an optional cosine vector, tenant ids. */
  schema(name = this.target) {
    return {
      name,
      fields: [
        { name: "account_id", type: "int64" },
        { name: "source_id", type: "int64" },
        { name: "document_id", type: "string", facet: true },
        { name: "position", type: "int32" },
        { name: "title", type: "string", index: false, optional: true },
        { name: "url", type: "string", index: false, optional: true },
        { name: "content", type: "string", index: false, optional: true },
        { name: "title_terms", type: "string" },
        { name: "content_terms", type: "string" },
        { name: "term_count", type: "int32", facet: true },
        { name: "content_bytes", type: "int32", facet: true },
        { name: "embedding", type: "float[]", num_dim: this.options.dimensions, optional: true, vec_dist: "cosine" },
        { name: "has_vector", type: "bool" },
        { name: "indexed_at", type: "int64" },
      ],
    };
  }

  async start() {
    const { version } = (await this.client.debug.retrieve()) as { version?: string };
    if (version && !isSupportedTypesenseVersion(version)) {
      throw new Error(`Typesense ${version} at ${this.options.url} is not supported: needs ${MIN_TYPESENSE_VERSION} or later`);
    }
    const current = await this.servingCollection();
    const own = this.modelCollection();
    if (current === undefined) {
      this.target = own;
      await this.createCollection(own);
      await this.client.aliases().upsert(this.options.collection, { collection_name: own });
    } else if (!this.options.switchingModel || current === own) {
      // No switch (or one whose alias already moved before a crash): the collection searched is written.
      this.target = current;
      await this.checkCollection(current);
    } else {
      this.target = own;
      this.previous = current;
      await this.createCollection(own);
    }
  }

  /** The collection the alias points at, the collection itself from before aliases, or undefined when neither exists. */
  private async servingCollection(): Promise<string | undefined> {
    try {
      return ((await this.client.aliases(this.options.collection).retrieve()) as { collection_name: string }).collection_name;
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
    }
    try {
      await this.client.collections(this.options.collection).retrieve();
      return this.options.collection;
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
      return undefined;
    }
  }

  /** One collection per embedding model and dimensions, so a model switch never mixes vectors. */
  private modelCollection(): string {
    return `${this.options.collection}__${(this.options.model ?? "none").replace(/[^\w-]/g, "_")}_${this.options.dimensions}`;
  }

  private async createCollection(name: string) {
    try {
      await this.client.collections().create(this.schema(name) as never);
    } catch (err) {
      // Another replica (or an earlier start) created it: it must have this schema's fields and dimensions.
      if (!(err instanceof Errors.ObjectAlreadyExists)) throw err;
      await this.checkCollection(name);
    }
  }

  private async checkCollection(name: string) {
    const existing = (await this.client.collections(name).retrieve()) as unknown as {
      fields: { name: string; num_dim?: number }[];
    };
    const names = new Set(existing.fields.map((f) => f.name));
    const missing = this.schema(name).fields.filter((f) => !names.has(f.name)).map((f) => f.name);
    if (missing.length) {
      throw new Error(`Typesense collection ${name} lacks fields ${missing.join(", ")}: drop it (MongoDB holds every chunk) or set TYPESENSE_COLLECTION`);
    }
    const dims = existing.fields.find((f) => f.name === "embedding")?.num_dim;
    if (dims !== this.options.dimensions) {
      throw new Error(`Typesense collection ${name} has ${dims}-d vectors, the embedding model gives ${this.options.dimensions}`);
    }
  }

  /**
   * Copies chunks into the new model's collection during a model switch (their vectors follow from the
   * embedding stage); the collection searched meanwhile is not touched.
   */
  async copyForModelSwitch(chunks: IndexedChunk[]) {
    await this.importChunks(this.target, chunks);
  }

  /**
   * Ends a model switch: the alias points at the new model's collection (one request: every replica's next
   * search reads it), and the previous collection is dropped. A collection from before aliases has the alias's
   * name, so it is dropped first and the alias created after it: searches in between (milliseconds) fail.
   */
  async finishModelSwitch() {
    const previous = this.previous;
    if (!previous) return;
    if (previous === this.options.collection) await this.client.collections(previous).delete();
    await this.client.aliases().upsert(this.options.collection, { collection_name: this.target });
    this.previous = undefined;
    if (previous !== this.options.collection) await this.client.collections(previous).delete();
  }

  async stop() {}

  /** The tenant filter every read and delete carries. */
  private scope(accountId: number, sourceIds?: number[]): string {
    if (!Number.isInteger(accountId)) throw new Error("account id must be an integer");
    const parts = [`account_id:=${accountId}`];
    if (sourceIds) parts.push(`source_id:[${sourceIds.filter(Number.isInteger).join(",") || "-1"}]`);
    return parts.join(" && ");
  }

  private documents(collection = this.target) {
    return this.client.collections<ChunkDocument>(collection).documents();
  }

  /** The collections a text write or delete goes to: the model's, and during a switch the one still searched. */
  private written(): string[] {
    return this.previous ? [this.target, this.previous] : [this.target];
  }

  /** Runs searches in as few multi_search requests as Typesense accepts (one, unless a query has many terms). */
  private async multi(searches: Record<string, unknown>[]): Promise<SearchResult[]> {
    const batches: Record<string, unknown>[][] = [];
    for (let i = 0; i < searches.length; i += MULTI_SEARCH_LIMIT) batches.push(searches.slice(i, i + MULTI_SEARCH_LIMIT));
    const answers = await Promise.all(
      batches.map(
        (batch) =>
          this.client.multiSearch.perform({ searches: batch.map((s) => ({ collection: this.options.collection, ...s })) } as never) as unknown as Promise<{
            results: SearchResult[];
          }>,
      ),
    );
    const results = answers.flatMap((a) => a.results);
    for (const r of results) if (r.error) throw new Error(`Typesense search failed: ${r.error}`);
    return results;
  }

  async upsertChunks(chunks: IndexedChunk[]) {
    await this.importChunks(this.target, chunks);
    // The collection searched during a switch holds another model's vectors: text only.
    if (this.previous) await this.importChunks(this.previous, chunks.map((c) => ({ ...c, vector: null })));
  }

  private async importChunks(collection: string, chunks: IndexedChunk[]) {
    if (!chunks.length) return;
    const docs: ChunkDocument[] = chunks.map((c) => {
      const titleTerms = terms(c.title);
      const contentTerms = terms(c.content);
      return {
        id: c.id,
        account_id: c.accountId,
        source_id: c.sourceId,
        document_id: c.documentId,
        position: c.position,
        title: c.title,
        url: c.url,
        content: c.content,
        title_terms: titleTerms.join(" "),
        content_terms: contentTerms.join(" "),
        term_count: TITLE_WEIGHT * titleTerms.length + contentTerms.length,
        content_bytes: Buffer.byteLength(c.content),
        has_vector: c.vector !== null,
        indexed_at: c.indexedAt,
        ...(c.vector ? { embedding: Array.from(c.vector) } : {}),
      };
    });
    await this.documents(collection).import(docs, { action: "upsert" });
  }

  /** Typesense has no multi-document transaction: the new chunks go in first, so a document is never absent. */
  async replaceChunks(accountId: number, chunks: IndexedChunk[], staleIds: string[]) {
    await this.upsertChunks(chunks);
    if (staleIds.length) await this.deleteChunks(accountId, staleIds);
  }

  async setVectors(accountId: number, vectors: { id: string; vector: Float32Array }[]) {
    if (!vectors.length) return;
    // Chunk ids are derived from the account (see documentIdFor), so an update reaches only that account's chunks.
    void accountId;
    try {
      await this.documents().import(
        vectors.map((v) => ({ id: v.id, embedding: Array.from(v.vector), has_vector: true })) as never,
        { action: "update" },
      );
    } catch (err) {
      // A chunk deleted while its vector was being computed is simply gone; anything else is an error.
      if (!(err instanceof Errors.ImportError)) throw err;
      const failures = (err as unknown as { importResults?: { success: boolean; code?: number }[] }).importResults ?? [];
      if (failures.some((r) => !r.success && r.code !== 404)) throw err;
    }
  }

  async deleteChunks(accountId: number, ids: string[]) {
    for (const collection of this.written()) {
      for (let i = 0; i < ids.length; i += DELETE_BATCH) {
        await this.documents(collection).delete({ filter_by: `${this.scope(accountId)} && id:${quoteList(ids.slice(i, i + DELETE_BATCH))}` });
      }
    }
  }

  async deleteSource(accountId: number, sourceId: number) {
    for (const collection of this.written()) await this.documents(collection).delete({ filter_by: this.scope(accountId, [sourceId]) });
  }

  /**
   * The keyword searches of a query: the account's chunk count and total length, then per query term its
   * document frequency in the account and the chunks of the scope that contain it, as many as the
   * per-term share allows (Typesense has no OR of terms: a multi-term query drops terms from its ends
   * only). BM25's statistics are the account's, the population of the embedded engine's per-account index.
   */
  private keywordSearches(q: IndexQuery, queryTerms: string[], perPage: number): Record<string, unknown>[] {
    const account = this.scope(q.accountId);
    const scoped = q.sourceIds ? this.scope(q.accountId, q.sourceIds) : account;
    const match = { query_by: "title_terms,content_terms", prefix: "false", num_typos: 0, typo_tokens_threshold: 0, drop_tokens_threshold: 0 };
    const perTerm = Math.min(perPage, Math.max(MIN_CANDIDATES_PER_TERM, Math.ceil((FULL_CANDIDATE_TERMS * perPage) / queryTerms.length)));
    const candidates = (t: string, filter_by: string) => ({ ...match, q: t, filter_by, include_fields: CANDIDATE_FIELDS, highlight_fields: "none", per_page: perTerm });
    return [
      { q: "*", filter_by: account, facet_by: "term_count", max_facet_values: 1, per_page: 0 },
      ...queryTerms.flatMap((t) =>
        q.sourceIds ? [{ ...match, q: t, filter_by: account, per_page: 0, highlight_fields: "none" }, candidates(t, scoped)] : [candidates(t, account)],
      ),
    ];
  }

  /** BM25 of the candidates with the account's statistics, best first (ties by id, as fusion breaks them). */
  private rankKeyword(q: IndexQuery, queryTerms: string[], [totals, ...perTerm]: SearchResult[], perPage: number): { document: ChunkDocument; score: number }[] {
    const n = totals!.found;
    const totalLength = totals!.facet_counts?.find((f) => f.field_name === "term_count")?.stats?.sum ?? 0;
    if (!n || !totalLength) return [];
    const avgLength = totalLength / n;
    const step = q.sourceIds ? 2 : 1;
    const idf = new Map<string, number>();
    const documents = new Map<string, ChunkDocument>();
    queryTerms.forEach((t, i) => {
      const df = perTerm[i * step]!.found;
      if (df) idf.set(t, bm25Idf(n, df));
      for (const h of perTerm[i * step + step - 1]!.hits ?? []) documents.set(h.document.id, h.document);
    });
    const ranked: { document: ChunkDocument; score: number }[] = [];
    for (const document of documents.values()) {
      const tf = termFrequencies(document);
      let score = 0;
      for (const [term, weight] of idf) {
        const f = tf.get(term);
        if (f) score += bm25Term(f, weight, document.term_count, avgLength);
      }
      if (score > 0) ranked.push({ document, score });
    }
    ranked.sort((a, b) => b.score - a.score || (a.document.id < b.document.id ? -1 : 1));
    return ranked.slice(0, perPage);
  }

  private vectorSearch(q: IndexQuery, perPage: number): Record<string, unknown> {
    return {
      q: "*",
      filter_by: this.scope(q.accountId, q.sourceIds),
      vector_query: `embedding:([${Array.from(q.vector!).join(",")}], k:${perPage})`,
      include_fields: HIT_FIELDS,
      per_page: perPage,
    };
  }

  async search(q: IndexQuery): Promise<IndexResult> {
    const perPage = Math.min(q.depth, 250);
    const queryTerms = [...new Set(terms(q.text))];
    const wantsVectors = q.mode !== "keyword" && q.vector !== null;
    const keywordNeeded = q.mode !== "semantic" || !wantsVectors;
    const searches: Record<string, unknown>[] = [];
    if (wantsVectors) searches.push(this.vectorSearch(q, perPage));
    if (keywordNeeded && queryTerms.length) searches.push(...this.keywordSearches(q, queryTerms, perPage));
    let results = searches.length ? await this.multi(searches) : [];
    const nearest = wantsVectors ? results.shift()! : undefined;
    // Typesense returns the k nearest whatever their distance: none at all means no vector in scope.
    const modeUsed = nearest?.hits?.length ? q.mode : "keyword";
    if (modeUsed === "keyword" && !keywordNeeded && queryTerms.length) results = await this.multi(this.keywordSearches(q, queryTerms, perPage));
    const keyword = modeUsed !== "semantic" && results.length ? this.rankKeyword(q, queryTerms, results, perPage) : [];
    const vector = modeUsed !== "keyword" ? (nearest!.hits ?? []).filter((h) => h.vector_distance! <= q.maxDistance) : [];

    if (modeUsed === "keyword") return { modeUsed, hits: keyword.map(({ document, score }) => toChunkHit(document, score, { textScore: score })) };
    if (modeUsed === "semantic") {
      return { modeUsed, hits: vector.map((h) => toChunkHit(h.document, 1 - h.vector_distance!, { vectorDistance: h.vector_distance! })) };
    }
    const documents = new Map<string, ChunkDocument>();
    for (const { document } of keyword) documents.set(document.id, document);
    for (const h of vector) documents.set(h.document.id, h.document);
    const fused = fuseLists(
      keyword.map(({ document, score }) => ({ id: document.id, score })),
      vector.map((h) => ({ id: h.document.id, distance: h.vector_distance! })),
      q.alpha,
    );
    return {
      modeUsed,
      hits: fused.slice(0, q.depth).map((f) => toChunkHit(documents.get(f.id)!, f.score, { textScore: f.textScore, vectorDistance: f.distance })),
    };
  }

  async countDocuments(accountId: number, sourceId?: number) {
    const [r] = await this.multi([
      { q: "*", filter_by: this.scope(accountId, sourceId === undefined ? undefined : [sourceId]), group_by: "document_id", group_limit: 1, per_page: 1 },
    ]);
    return r!.found;
  }

  async stats(accountId: number, sourceId?: number): Promise<IndexStats> {
    const filter_by = this.scope(accountId, sourceId === undefined ? undefined : [sourceId]);
    const [chunks, vectors, documents] = await this.multi([
      { q: "*", filter_by, per_page: 0, facet_by: "content_bytes", max_facet_values: 1 },
      // Vectors of the configured model: during a model switch the searched collection holds the previous model's.
      { q: "*", filter_by: `${filter_by} && has_vector:true`, per_page: 0, collection: this.target },
      { q: "*", filter_by, group_by: "document_id", group_limit: 1, per_page: 1 },
    ]);
    const contentBytes = chunks!.facet_counts?.find((f) => f.field_name === "content_bytes")?.stats?.sum ?? 0;
    return {
      documents: documents!.found,
      chunks: chunks!.found,
      vectors: vectors!.found,
      sizeBytes: Math.round(contentBytes + vectors!.found * this.options.dimensions * 4),
    };
  }

  /** Drops the alias and the collections it names or this engine writes (contract tests use a collection of their own). */
  async dropCollection() {
    const collections = new Set([(await this.servingCollection()) ?? this.target, ...this.written()]);
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

function toChunkHit(d: ChunkDocument, score: number, extra: { textScore?: number; vectorDistance?: number }): ChunkHit {
  return {
    id: d.id,
    sourceId: d.source_id,
    documentId: d.document_id,
    position: d.position,
    title: d.title ?? "",
    url: d.url ?? "",
    content: d.content ?? "",
    score,
    ...(extra.vectorDistance !== undefined ? { vectorDistance: extra.vectorDistance } : {}),
    ...(extra.textScore !== undefined ? { textScore: extra.textScore } : {}),
  };
}
