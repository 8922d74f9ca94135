import { Client, Errors } from "typesense";
import type { ChunkHit, IndexQuery, IndexResult, IndexStats, IndexedChunk, SearchIndex } from "./port";
import { STOP_WORDS } from "./tokenizer";

/** Name of the stop-word set registered in Typesense; the same list the embedded engine drops. */
export const STOPWORDS_SET = "platform-en";
/** Ids per delete-by-filter request, to keep filter strings short. */
const DELETE_BATCH = 100;

export interface TypesenseEngineOptions {
  url: string;
  apiKey: string;
  collection: string;
  dimensions: number;
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
  content_bytes: number;
  embedding?: number[];
  has_vector: boolean;
  indexed_at: number;
}

interface Hit {
  document: ChunkDocument;
  text_match?: number;
  vector_distance?: number;
  hybrid_search_info?: { rank_fusion_score?: number };
}

interface SearchResult {
  found: number;
  hits?: Hit[];
  grouped_hits?: unknown[];
  found_docs?: number;
  facet_counts?: { field_name: string; stats?: { sum?: number } }[];
  error?: string;
  code?: number;
}

/** Typesense filter value for a list of strings (backticks quote ids safely). */
function quoteList(values: string[]): string {
  return `[${values.map((v) => `\`${v.replace(/`/g, "")}\``).join(",")}]`;
}

/**
 * Production engine: one shared Typesense collection for all accounts, every request filtered by
 * account_id in one place (scope()). Hybrid search is Typesense's own rank fusion (text rank and vector
 * rank weighted by alpha); vectors are precomputed by the embedding stage and added by partial update.
 */
export class TypesenseEngine implements SearchIndex {
  readonly engine = "typesense" as const;
  private readonly client: Client;

  constructor(private readonly options: TypesenseEngineOptions) {
    this.client = new Client({
      nodes: [{ url: options.url }] as never,
      apiKey: options.apiKey,
      connectionTimeoutSeconds: 10,
      numRetries: 2,
      logLevel: "warn",
    });
  }

  /** The collection schema: chunk text for keyword ranking, an optional cosine vector, tenant and source ids. */
  schema() {
    return {
      name: this.options.collection,
      fields: [
        { name: "account_id", type: "int64" },
        { name: "source_id", type: "int64" },
        { name: "document_id", type: "string", facet: true },
        { name: "position", type: "int32" },
        { name: "title", type: "string", stem: true },
        { name: "url", type: "string", index: false, optional: true },
        { name: "content", type: "string", stem: true },
        { name: "content_bytes", type: "int32", facet: true },
        { name: "embedding", type: "float[]", num_dim: this.options.dimensions, optional: true, vec_dist: "cosine" },
        { name: "has_vector", type: "bool" },
        { name: "indexed_at", type: "int64" },
      ],
    };
  }

  async start() {
    await this.client.stopwords().upsert(STOPWORDS_SET, { stopwords: [...STOP_WORDS], locale: "en" });
    try {
      const existing = (await this.client.collections(this.options.collection).retrieve()) as unknown as {
        fields: { name: string; num_dim?: number }[];
      };
      const dims = existing.fields.find((f) => f.name === "embedding")?.num_dim;
      if (dims !== this.options.dimensions) {
        throw new Error(`Typesense collection ${this.options.collection} has ${dims}-d vectors, the embedding model gives ${this.options.dimensions}`);
      }
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
      await this.client.collections().create(this.schema() as never);
    }
  }

  async stop() {}

  /** The tenant filter every read and delete carries. */
  private scope(accountId: number, sourceIds?: number[]): string {
    if (!Number.isInteger(accountId)) throw new Error("account id must be an integer");
    const parts = [`account_id:=${accountId}`];
    if (sourceIds) parts.push(`source_id:[${sourceIds.filter(Number.isInteger).join(",") || "-1"}]`);
    return parts.join(" && ");
  }

  private documents() {
    return this.client.collections<ChunkDocument>(this.options.collection).documents();
  }

  private async multi(searches: Record<string, unknown>[]): Promise<SearchResult[]> {
    const res = (await this.client.multiSearch.perform({ searches: searches.map((s) => ({ collection: this.options.collection, ...s })) } as never)) as unknown as {
      results: SearchResult[];
    };
    for (const r of res.results) if (r.error) throw new Error(`Typesense search failed: ${r.error}`);
    return res.results;
  }

  async upsertChunks(chunks: IndexedChunk[]) {
    if (!chunks.length) return;
    const docs: ChunkDocument[] = chunks.map((c) => ({
      id: c.id,
      account_id: c.accountId,
      source_id: c.sourceId,
      document_id: c.documentId,
      position: c.position,
      title: c.title,
      url: c.url,
      content: c.content,
      content_bytes: Buffer.byteLength(c.content),
      has_vector: c.vector !== null,
      indexed_at: c.indexedAt,
      ...(c.vector ? { embedding: Array.from(c.vector) } : {}),
    }));
    await this.documents().import(docs, { action: "upsert" });
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
    for (let i = 0; i < ids.length; i += DELETE_BATCH) {
      await this.documents().delete({ filter_by: `${this.scope(accountId)} && id:${quoteList(ids.slice(i, i + DELETE_BATCH))}` });
    }
  }

  async deleteSource(accountId: number, sourceId: number) {
    await this.documents().delete({ filter_by: this.scope(accountId, [sourceId]) });
  }

  async search(q: IndexQuery): Promise<IndexResult> {
    const filter_by = this.scope(q.accountId, q.sourceIds);
    const perPage = Math.min(q.depth, 250);
    const keywordParams = {
      q: q.text,
      query_by: "title,content",
      query_by_weights: "2,1",
      prefix: "false",
      stopwords: STOPWORDS_SET,
      exclude_fields: "embedding",
      highlight_fields: "none",
      filter_by,
      per_page: perPage,
    };
    let modeUsed = q.mode;
    if (q.mode !== "keyword") {
      let available = q.vector !== null;
      if (available) {
        const [count] = await this.multi([{ q: "*", filter_by: `${filter_by} && has_vector:true`, per_page: 0 }]);
        available = count!.found > 0;
      }
      if (!available) modeUsed = "keyword";
    }
    const vectorQuery = (extra: string) =>
      `embedding:([${Array.from(q.vector ?? []).join(",")}], k:${perPage}, distance_threshold:${q.maxDistance}${extra})`;
    let search: Record<string, unknown>;
    if (modeUsed === "keyword") search = keywordParams;
    else if (modeUsed === "semantic") {
      search = { q: "*", filter_by, vector_query: vectorQuery(""), exclude_fields: "embedding", per_page: perPage };
    } else search = { ...keywordParams, vector_query: vectorQuery(`, alpha:${q.alpha}`) };
    const [result] = await this.multi([search]);
    const hits = (result!.hits ?? []).map((h): ChunkHit => {
      const d = h.document;
      const score =
        modeUsed === "keyword"
          ? (h.text_match ?? 0)
          : modeUsed === "semantic"
            ? 1 - (h.vector_distance ?? 2)
            : (h.hybrid_search_info?.rank_fusion_score ?? 0);
      return {
        id: d.id,
        sourceId: d.source_id,
        documentId: d.document_id,
        position: d.position,
        title: d.title,
        url: d.url ?? "",
        content: d.content,
        score,
        ...(h.vector_distance !== undefined && h.vector_distance < 2.01 ? { vectorDistance: h.vector_distance } : {}),
        ...(h.text_match ? { textScore: h.text_match } : {}),
      };
    });
    return { hits, modeUsed };
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
      { q: "*", filter_by: `${filter_by} && has_vector:true`, per_page: 0 },
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

  /** Drops the collection (contract tests use a collection of their own). */
  async dropCollection() {
    try {
      await this.client.collections(this.options.collection).delete();
    } catch (err) {
      if (!(err instanceof Errors.ObjectNotFound)) throw err;
    }
  }
}
