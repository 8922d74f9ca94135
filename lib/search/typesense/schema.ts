import { Errors, type Client } from "typesense";
import { TITLE_WEIGHT } from "../bm25";
import type { IndexedChunk, StoredChunk } from "../port";
import { terms } from "../tokenizer";
import { METADATA_FIELDS, metadataFields, storedMetadataFields, type MetadataFields } from "./filters";

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

/** A chunk in the chunks collection: what a hit shows, its analysed terms for matching, what filters read, no vector. */
export interface ChunkDocument extends StoredChunk, MetadataFields {
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
 * chunk's fields too (stored, not indexed), so a vector hit needs no second read, and what filters read
 * (indexed), so the nearest vectors are those of matching chunks.
 */
export interface VectorDocument extends StoredChunk, MetadataFields {
  id: string;
  embedding: number[];
  /** Absent on vectors written before filters (see ADDED_FIELDS) until their document's metadata is set again. */
  indexed_at?: number;
}

/** A vector's document: the chunk's tenant ids, what its hit shows and what filters read. */
export function vectorDocument(
  c: Pick<ChunkDocument, "id" | "account_id" | "source_id" | "document_id" | "position" | "title" | "url" | "content" | "chunk_start" | "chunk_end" | "indexed_at">,
  vector: Float32Array,
): VectorDocument {
  const { id, account_id, source_id, document_id, position, title, url, content, chunk_start, chunk_end, indexed_at } = c;
  return {
    id, account_id, source_id, embedding: Array.from(vector), document_id, position, title, url, content, ...range(chunk_start, chunk_end),
    indexed_at, ...storedMetadataFields(c),
  };
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
      { name: "document_id", type: "string" },
      // Optional: vectors written before filters have none, and a collection must take the field by a schema PATCH.
      { name: "indexed_at", type: "int64", optional: true },
      ...METADATA_FIELDS,
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
        ...METADATA_FIELDS,
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
    ...metadataFields(c.metadata),
  };
}

/** Typesense filter value for a list of strings (backticks quote ids safely). */
export function quoteList(values: string[]): string {
  return `[${values.map((v) => `\`${v.replace(/`/g, "")}\``).join(",")}]`;
}

export interface Schema {
  name: string;
  fields: readonly { name: string; num_dim?: number; optional?: boolean; index?: boolean }[];
}

/**
 * Indexed fields added to collections that may already exist (deployed clusters): the filter fields
 * (ADR 0058). A start adds the missing ones with a schema PATCH, which 0.24.1 accepts and applies to the stored
 * documents (it indexes their `document_id`, which vector documents always stored; a chunk written before has no
 * metadata until its document's is set again or it is re-indexed).
 */
export const ADDED_FIELDS: ReadonlySet<string> = new Set(["document_id", "indexed_at", ...METADATA_FIELDS.map((f) => f.name)]);

/** Creates a collection, or checks (and brings up to date) the one another replica (or an earlier start) created. */
export async function createCollection(client: Client, schema: Schema) {
  try {
    await client.collections().create(schema as never);
  } catch (err) {
    if (!(err instanceof Errors.ObjectAlreadyExists)) throw err;
    await checkCollection(client, schema);
  }
}

/** The schema's fields an existing collection lacks; a stored-only optional field needs none (Typesense keeps undeclared fields of a document). */
export function missingFields(schema: Schema, existing: readonly { name: string }[]): Schema["fields"] {
  const names = new Set(existing.map((f) => f.name));
  return schema.fields.filter((f) => !names.has(f.name) && !(f.optional && f.index === false));
}

/** An existing collection must have the schema's fields (the ADDED_FIELDS it lacks are added) and vector size. */
export async function checkCollection(client: Client, schema: Schema) {
  const retrieve = async () => ((await client.collections(schema.name).retrieve()) as unknown as { fields: { name: string; num_dim?: number }[] }).fields;
  let existing = await retrieve();
  const missing = missingFields(schema, existing);
  if (missing.some((f) => !ADDED_FIELDS.has(f.name))) {
    throw new Error(`Typesense collection ${schema.name} has another layout: drop it (MongoDB holds every chunk) or set TYPESENSE_COLLECTION`);
  }
  if (missing.length) {
    try {
      await client.collections(schema.name).update({ fields: missing } as never);
    } catch (err) {
      // Another replica starting at the same time may have added them first.
      existing = await retrieve();
      if (missingFields(schema, existing).length) throw err;
    }
  }
  const want = schema.fields.find((f) => f.num_dim)?.num_dim;
  const dims = existing.find((f) => f.num_dim)?.num_dim;
  if (want !== dims) throw new Error(`Typesense collection ${schema.name} has ${dims}-d vectors, the embedding model gives ${want}`);
}
