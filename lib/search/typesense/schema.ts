import { Errors, type Client } from "typesense";
import { TITLE_WEIGHT } from "../bm25";
import type { IndexedChunk, StoredChunk } from "../port";
import { terms } from "../tokenizer";

/**
 * Typesense versions the engine runs on: 0.24.1 (tested in CI) and later. It uses only what 0.24 already
 * has (documents import, multi_search over several collections, filter_by, facet stats, `vector_query` with
 * `k` on a float[] field) and none of the later additions (stop-word sets, stemming, native hybrid search,
 * distance thresholds), which the platform does itself, so results are the same on every version.
 */
export const MIN_TYPESENSE_VERSION = "0.24.1";

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

/** A chunk in the chunks collection: what a hit shows, its analysed terms for matching, no vector. */
export interface ChunkDocument extends StoredChunk {
  id: string;
  /** The platform's index terms (tokenizer.terms) of title and content, space-separated: what Typesense matches. */
  title_terms: string;
  content_terms: string;
  /** BM25 length of the chunk: title terms count TITLE_WEIGHT times (as in the embedded engine). */
  term_count: number;
  content_bytes: number;
  indexed_at: number;
}

/**
 * A chunk's vector, in a collection per embedding model: Typesense 0.24 parses a hit's whole stored
 * document, and a 512-d vector is most of a chunk's JSON, so keyword candidates and text reads would pay
 * for it on every hit; and a model switch fills a new vectors collection while the text stays. It carries the
 * chunk's fields too (stored, not indexed), so a vector hit needs no second read.
 */
export interface VectorDocument extends StoredChunk {
  id: string;
  embedding: number[];
}

/** A vector's document: the chunk's tenant ids and what its hit shows. */
export function vectorDocument(
  c: Pick<ChunkDocument, "id" | "account_id" | "source_id" | "document_id" | "position" | "title" | "url" | "content" | "chunk_start" | "chunk_end">,
  vector: Float32Array,
): VectorDocument {
  const { id, account_id, source_id, document_id, position, title, url, content, chunk_start, chunk_end } = c;
  return { id, account_id, source_id, embedding: Array.from(vector), document_id, position, title, url, content, ...range(chunk_start, chunk_end) };
}

/** A chunk's range as stored fields: left out when not known (Typesense stores no null in an int field). */
function range(start: number | null | undefined, end: number | null | undefined): { chunk_start?: number; chunk_end?: number } {
  return typeof start === "number" && typeof end === "number" ? { chunk_start: start, chunk_end: end } : {};
}

/** Chunks hidden from searchers while replaceChunks swaps a page's versions (see TypesenseEngine.replaceChunks). */
export interface ReplacementDocument {
  id: string;
  account_id: number;
  hidden: string[];
  /** Milliseconds since the epoch; an older replacement (its writer died half-way) hides nothing. */
  expires_at: number;
}

export interface CollectionNames {
  chunks: string;
  /** The alias searches read vectors through: it names the embedding model's vectors collection. */
  vectors: string;
  replacements: string;
}

/** The collections named after TYPESENSE_COLLECTION (the alias of the vectors). */
export function collectionNames(base: string): CollectionNames {
  return { chunks: `${base}__chunks`, vectors: base, replacements: `${base}__replacements` };
}

/** One vectors collection per embedding model and dimensions, so a model switch never mixes vectors. */
export function vectorCollectionName(base: string, model: string | undefined, dimensions: number): string {
  return `${base}__${(model ?? "none").replace(/[^\w-]/g, "_")}_${dimensions}`;
}

export function vectorSchema(name: string, dimensions: number) {
  return {
    name,
    fields: [
      { name: "account_id", type: "int64" },
      { name: "source_id", type: "int64" },
      { name: "embedding", type: "float[]", num_dim: dimensions, vec_dist: "cosine" },
    ],
  };
}

/** The model-independent collections: analysed terms and stored text, and replacements in progress. */
export function schemas(names: CollectionNames) {
  return {
    chunks: {
      name: names.chunks,
      fields: [
        { name: "account_id", type: "int64" },
        { name: "source_id", type: "int64" },
        { name: "document_id", type: "string", facet: true },
        { name: "position", type: "int32" },
        { name: "title", type: "string", index: false, optional: true },
        { name: "url", type: "string", index: false, optional: true },
        { name: "content", type: "string", index: false, optional: true },
        // Optional: a collection created before citations carried ranges stores them all the same (unindexed).
        { name: "chunk_start", type: "int32", index: false, optional: true },
        { name: "chunk_end", type: "int32", index: false, optional: true },
        { name: "title_terms", type: "string" },
        { name: "content_terms", type: "string" },
        { name: "term_count", type: "int32", facet: true },
        { name: "content_bytes", type: "int32", facet: true },
        { name: "indexed_at", type: "int64" },
      ],
    },
    replacements: {
      name: names.replacements,
      fields: [
        { name: "account_id", type: "int64" },
        { name: "hidden", type: "string[]", index: false, optional: true },
        { name: "expires_at", type: "int64" },
      ],
    },
  };
}

export function chunkDocument(c: IndexedChunk): ChunkDocument {
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
    ...range(c.chunkStart, c.chunkEnd),
    title_terms: titleTerms.join(" "),
    content_terms: contentTerms.join(" "),
    term_count: TITLE_WEIGHT * titleTerms.length + contentTerms.length,
    content_bytes: Buffer.byteLength(c.content),
    indexed_at: c.indexedAt,
  };
}

/** Typesense filter value for a list of strings (backticks quote ids safely). */
export function quoteList(values: string[]): string {
  return `[${values.map((v) => `\`${v.replace(/`/g, "")}\``).join(",")}]`;
}

export interface Schema {
  name: string;
  fields: { name: string; num_dim?: number; optional?: boolean; index?: boolean }[];
}

/** Creates a collection, or checks the one another replica (or an earlier start) created. */
export async function createCollection(client: Client, schema: Schema) {
  try {
    await client.collections().create(schema as never);
  } catch (err) {
    if (!(err instanceof Errors.ObjectAlreadyExists)) throw err;
    await checkCollection(client, schema);
  }
}

/** An existing collection must have the schema's fields and vector size. */
export async function checkCollection(client: Client, schema: Schema) {
  const existing = (await client.collections(schema.name).retrieve()) as unknown as { fields: { name: string; num_dim?: number }[] };
  const names = new Set(existing.fields.map((f) => f.name));
  // A stored-only optional field added later needs no migration: Typesense keeps undeclared fields of a document.
  if (schema.fields.some((f) => !names.has(f.name) && !(f.optional && f.index === false))) {
    throw new Error(`Typesense collection ${schema.name} has another layout: drop it (MongoDB holds every chunk) or set TYPESENSE_COLLECTION`);
  }
  const want = schema.fields.find((f) => f.num_dim)?.num_dim;
  const dims = existing.fields.find((f) => f.num_dim)?.num_dim;
  if (want !== dims) throw new Error(`Typesense collection ${schema.name} has ${dims}-d vectors, the embedding model gives ${want}`);
}
