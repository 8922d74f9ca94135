import { KeywordIndex } from "./bm25";
import { fuseRanks } from "./fusion";
import type { ChunkHit, IndexQuery, IndexResult, IndexStats, IndexedChunk, SearchIndex } from "./port";
import { terms } from "./tokenizer";
import { VectorIndex } from "./vectors";

interface DocumentEntry {
  sourceId: number;
  chunks: Set<number>;
}

/** One account's chunks: slot tables plus a keyword and a vector index over the same slots. */
class Partition {
  readonly slotOf = new Map<string, number>();
  readonly ids: (string | undefined)[] = [];
  readonly chunks: (Omit<IndexedChunk, "vector" | "accountId"> | undefined)[] = [];
  readonly documents = new Map<string, DocumentEntry>();
  readonly keyword = new KeywordIndex();
  readonly vectors: VectorIndex;
  private freeSlots: number[] = [];
  contentBytes = 0;

  constructor(dimensions: number, vectorOptions: ConstructorParameters<typeof VectorIndex>[1]) {
    this.vectors = new VectorIndex(dimensions, vectorOptions);
  }

  upsert(chunk: IndexedChunk) {
    const existing = this.slotOf.get(chunk.id);
    if (existing !== undefined) this.remove(chunk.id);
    // Keyword postings of a freed slot are dead until compaction, so slots are not reused before it.
    const slot = this.ids.length;
    this.slotOf.set(chunk.id, slot);
    this.ids[slot] = chunk.id;
    const { vector, accountId: _a, ...stored } = chunk;
    this.chunks[slot] = stored;
    this.contentBytes += chunk.content.length + chunk.title.length + chunk.url.length;
    let doc = this.documents.get(chunk.documentId);
    if (!doc) this.documents.set(chunk.documentId, (doc = { sourceId: chunk.sourceId, chunks: new Set() }));
    doc.chunks.add(slot);
    this.keyword.add(slot, terms(chunk.title), terms(chunk.content));
    if (vector) this.vectors.set(slot, vector);
  }

  remove(id: string) {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    const chunk = this.chunks[slot]!;
    this.slotOf.delete(id);
    this.ids[slot] = undefined;
    this.chunks[slot] = undefined;
    this.contentBytes -= chunk.content.length + chunk.title.length + chunk.url.length;
    const doc = this.documents.get(chunk.documentId);
    doc?.chunks.delete(slot);
    if (doc && !doc.chunks.size) this.documents.delete(chunk.documentId);
    this.keyword.remove(slot);
    this.vectors.remove(slot);
  }

  hit(slot: number, score: number, extra: Partial<ChunkHit>): ChunkHit {
    const c = this.chunks[slot]!;
    return {
      id: c.id,
      sourceId: c.sourceId,
      documentId: c.documentId,
      position: c.position,
      title: c.title,
      url: c.url,
      content: c.content,
      score,
      ...extra,
    };
  }
}

/** Whether any chunk in scope (the partition, or the given sources of it) has a vector. */
function hasVectorsInScope(p: Partition, sources: Set<number> | undefined): boolean {
  if (!p.vectors.size) return false;
  if (!sources) return true;
  for (const doc of p.documents.values()) {
    if (!sources.has(doc.sourceId)) continue;
    for (const slot of doc.chunks) if (p.vectors.has(slot)) return true;
  }
  return false;
}

export interface EmbeddedEngineOptions {
  /** Embedding dimensions (512 for the bundled model). */
  dimensions: number;
  flatCutoff?: number;
  efSearch?: number;
  efConstruction?: number;
  m?: number;
}

/**
 * The in-process engine for one-process deployments and tests: one partition per account (so a tenant's
 * query never even reads another tenant's postings), BM25 keyword ranking, cosine vector ranking (exact or
 * HNSW), and hybrid by Typesense's rank fusion with the same alpha. It is a cache of MongoDB, which holds
 * every chunk and vector; the search service refills it at start.
 */
export class EmbeddedEngine implements SearchIndex {
  readonly engine = "embedded" as const;
  private readonly partitions = new Map<number, Partition>();

  constructor(private readonly options: EmbeddedEngineOptions) {}

  async start() {}

  async stop() {
    this.partitions.clear();
  }

  private partition(accountId: number): Partition {
    let p = this.partitions.get(accountId);
    if (!p) {
      const { dimensions, ...vectorOptions } = this.options;
      this.partitions.set(accountId, (p = new Partition(dimensions, vectorOptions)));
    }
    return p;
  }

  /** Synchronous bulk load used by the start-up rebuild (no awaits between chunks). */
  load(chunks: Iterable<IndexedChunk>) {
    for (const chunk of chunks) this.partition(chunk.accountId).upsert(chunk);
  }

  async upsertChunks(chunks: IndexedChunk[]) {
    this.load(chunks);
  }

  async setVectors(accountId: number, vectors: { id: string; vector: Float32Array }[]) {
    const p = this.partitions.get(accountId);
    if (!p) return;
    for (const { id, vector } of vectors) {
      const slot = p.slotOf.get(id);
      if (slot !== undefined) p.vectors.set(slot, vector);
    }
  }

  async deleteChunks(accountId: number, ids: string[]) {
    const p = this.partitions.get(accountId);
    if (p) for (const id of ids) p.remove(id);
  }

  async deleteSource(accountId: number, sourceId: number) {
    const p = this.partitions.get(accountId);
    if (!p) return;
    for (const doc of [...p.documents.values()]) {
      if (doc.sourceId !== sourceId) continue;
      for (const slot of [...doc.chunks]) p.remove(p.ids[slot]!);
    }
  }

  async search(q: IndexQuery): Promise<IndexResult> {
    const p = this.partitions.get(q.accountId);
    const wantsVectors = q.mode !== "keyword";
    const sources = q.sourceIds ? new Set(q.sourceIds) : undefined;
    const vectorsAvailable = wantsVectors && q.vector !== null && p !== undefined && hasVectorsInScope(p, sources);
    const modeUsed = wantsVectors && !vectorsAvailable ? "keyword" : q.mode;
    if (!p) return { hits: [], modeUsed };
    const accept = sources ? (slot: number) => sources.has(p.chunks[slot]!.sourceId) : undefined;

    const keyword = () => p.keyword.search(terms(q.text), q.depth, accept);
    const vector = () => p.vectors.search(q.vector!, q.depth, q.maxDistance, accept);

    if (modeUsed === "keyword") {
      const k = keyword();
      return { modeUsed, hits: k.slots.map((slot, i) => p.hit(slot, k.scores[i]!, { textScore: k.scores[i]! })) };
    }
    if (modeUsed === "semantic") {
      const v = vector();
      return { modeUsed, hits: v.slots.map((slot, i) => p.hit(slot, 1 - v.distances[i]!, { vectorDistance: v.distances[i]! })) };
    }
    const k = keyword();
    const v = vector();
    const fused = fuseRanks(
      k.slots.map((slot, i) => ({ id: String(slot), score: k.scores[i]! })),
      v.slots.map((slot, i) => ({ id: String(slot), distance: v.distances[i]! })),
      q.alpha,
    );
    return {
      modeUsed,
      hits: fused.slice(0, q.depth).map((f) => p.hit(Number(f.id), f.score, { textScore: f.textScore, vectorDistance: f.distance })),
    };
  }

  async countDocuments(accountId: number, sourceId?: number) {
    const p = this.partitions.get(accountId);
    if (!p) return 0;
    if (sourceId === undefined) return p.documents.size;
    let n = 0;
    for (const doc of p.documents.values()) if (doc.sourceId === sourceId) n++;
    return n;
  }

  async stats(accountId: number, sourceId?: number): Promise<IndexStats> {
    const p = this.partitions.get(accountId);
    if (!p) return { documents: 0, chunks: 0, vectors: 0, sizeBytes: 0 };
    let documents = 0;
    let chunks = 0;
    let vectors = 0;
    let contentBytes = 0;
    for (const doc of p.documents.values()) {
      if (sourceId !== undefined && doc.sourceId !== sourceId) continue;
      documents++;
      for (const slot of doc.chunks) {
        chunks++;
        if (p.vectors.has(slot)) vectors++;
        const c = p.chunks[slot]!;
        contentBytes += c.content.length + c.title.length + c.url.length;
      }
    }
    const total = p.slotOf.size || 1;
    const share = chunks / total;
    const sizeBytes = Math.round(contentBytes + share * (p.keyword.sizeBytes + p.vectors.sizeBytes));
    return { documents, chunks, vectors, sizeBytes };
  }

  /** Partition internals for the benchmark (recall of the graph against exact search). */
  vectorIndexOf(accountId: number): VectorIndex | undefined {
    return this.partitions.get(accountId)?.vectors;
  }
}
