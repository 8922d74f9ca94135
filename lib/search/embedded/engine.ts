import { fuseLists } from "../fusion";
import { filterScope } from "./filter-scope";
import { hasVectorsInScope, Partition } from "./partition";
import { readPartitionSnapshot, writePartitionSnapshot, type SnapshotContext, type SnapshotLoad, type SnapshotStamp, type SnapshotWritten } from "./snapshot";
import type { IndexQuery, IndexResult, IndexStats, IndexedChunk, SearchIndex } from "../port";
import { terms } from "../tokenizer";
import type { VectorIndex } from "../vectors";

export { SNAPSHOT_FORMAT, type SnapshotLoad, type SnapshotStamp, type SnapshotWritten } from "./snapshot";

/**
 * A partition with at least this many characters of chunk text reads it from its snapshot file; smaller
 * ones keep it in memory (a few megabytes each), so thousands of small tenants do not hold a file open each.
 */
export const TEXT_ON_DISK_FROM = 8_000_000;

export interface EmbeddedEngineOptions {
  /** Embedding dimensions (512 for the bundled model). */
  dimensions: number;
  /** Characters of chunk text from which a partition reads text from its snapshot (default TEXT_ON_DISK_FROM). */
  textOnDiskFrom?: number;
  flatCutoff?: number;
  efSearch?: number;
  efConstruction?: number;
  m?: number;
}

/**
 * The in-process engine for one-process deployments and tests: one partition per account (so a tenant's
 * query never even reads another tenant's postings), BM25 keyword ranking, cosine vector ranking (exact or
 * HNSW), and hybrid by fuseLists with the same alpha as on Typesense. It is a cache of MongoDB, which holds
 * every chunk and vector. A partition can be written to and read back from a snapshot directory (keyword
 * postings, chunk table and text in one checksummed file, the HNSW graph in hnswlib's own file), stamped
 * with the MongoDB state it reflects; the search service decides when a stamp is current.
 */
export class EmbeddedEngine implements SearchIndex {
  readonly engine = "embedded" as const;
  private readonly partitions = new Map<number, Partition>();

  constructor(private readonly options: EmbeddedEngineOptions) {}

  async start() {}

  async stop() {
    for (const p of this.partitions.values()) p.texts.close();
    this.partitions.clear();
  }

  private newPartition(): Partition {
    const { dimensions, textOnDiskFrom: _t, ...vectorOptions } = this.options;
    return new Partition(dimensions, vectorOptions);
  }

  private textOnDisk(chars: number): boolean {
    return chars >= (this.options.textOnDiskFrom ?? TEXT_ON_DISK_FROM);
  }

  private partition(accountId: number): Partition {
    let p = this.partitions.get(accountId);
    if (!p) this.partitions.set(accountId, (p = this.newPartition()));
    return p;
  }

  /** The partition once no snapshot of it is being written (mutations wait; searches do not). */
  private async writable(accountId: number): Promise<Partition> {
    for (;;) {
      const p = this.partition(accountId);
      if (!p.busy) return p;
      await p.busy;
    }
  }

  /** Synchronous bulk load used by the start-up rebuild (no awaits between chunks). */
  load(chunks: Iterable<IndexedChunk>) {
    for (const chunk of chunks) {
      const p = this.partition(chunk.accountId);
      if (p.busy) throw new Error(`partition ${chunk.accountId} is being snapshotted`);
      p.upsert(chunk);
    }
  }

  async upsertChunks(chunks: IndexedChunk[]) {
    const byAccount = new Map<number, IndexedChunk[]>();
    for (const c of chunks) {
      const list = byAccount.get(c.accountId);
      if (list) list.push(c);
      else byAccount.set(c.accountId, [c]);
    }
    for (const [accountId, list] of byAccount) {
      const p = await this.writable(accountId);
      for (const c of list) p.upsert(c);
    }
  }

  async replaceChunks(accountId: number, chunks: IndexedChunk[], staleIds: string[]) {
    if (chunks.some((c) => c.accountId !== accountId)) throw new Error(`replaceChunks: a chunk of another account than ${accountId}`);
    // One synchronous section: no search runs between the upserts and the removals.
    const p = await this.writable(accountId);
    for (const c of chunks) p.upsert(c);
    for (const id of staleIds) p.remove(id);
  }

  async setVectors(accountId: number, vectors: { id: string; vector: Float32Array }[]) {
    if (!this.partitions.has(accountId)) return;
    const p = await this.writable(accountId);
    for (const { id, vector } of vectors) {
      const slot = p.slotOf.get(id);
      if (slot !== undefined) p.vectors.set(slot, vector);
    }
  }

  async deleteChunks(accountId: number, ids: string[]) {
    if (!this.partitions.has(accountId)) return;
    const p = await this.writable(accountId);
    for (const id of ids) p.remove(id);
  }

  async setDocumentMetadata(accountId: number, documentId: string, _chunkIds: string[], metadata: Record<string, unknown> | null) {
    if (!this.partitions.has(accountId)) return;
    const p = await this.writable(accountId);
    // Chunks read their document's metadata: one change covers them all.
    const doc = p.documents.get(documentId);
    if (doc) p.setMetadata(doc, metadata);
  }

  async deleteSource(accountId: number, sourceId: number) {
    if (!this.partitions.has(accountId)) return;
    const p = await this.writable(accountId);
    const slots: number[] = [];
    for (const doc of p.documents.values()) if (doc.sourceId === sourceId) slots.push(...doc.chunks);
    p.removeSlots(slots);
  }

  async search(q: IndexQuery): Promise<IndexResult> {
    const p = this.partitions.get(q.accountId);
    const wantsVectors = q.mode !== "keyword";
    const sources = q.sourceIds ? new Set(q.sourceIds) : undefined;
    // A filter narrows the scope before ranking: both rankings see only the chunks it matches, so their top k
    // are the true top k of those (corpus statistics stay the partition's, as with sources).
    const scope = p && q.filter ? filterScope(p, sources, q.filter) : undefined;
    const vectorsAvailable = wantsVectors && q.vector !== null && p !== undefined && (scope ? scope.vectors() : hasVectorsInScope(p, sources));
    const modeUsed = wantsVectors && !vectorsAvailable ? "keyword" : q.mode;
    if (!p) return { hits: [], modeUsed };
    const accept = scope ? scope.accept : sources ? (slot: number) => sources.has(p.chunks[slot]!.sourceId) : undefined;

    const keyword = () => p.keyword.search(terms(q.text), q.depth, accept);
    const vector = () => p.vectors.search(q.vector!, q.depth, q.maxDistance, accept, scope?.slots);

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
    // Fused by chunk id, so ties fall the same way whatever the slots are (they are renumbered at a restart).
    const slotOf = new Map<string, number>();
    const idOf = (slot: number) => {
      const id = p.chunks[slot]!.id;
      slotOf.set(id, slot);
      return id;
    };
    const fused = fuseLists(
      k.slots.map((slot, i) => ({ id: idOf(slot), score: k.scores[i]! })),
      v.slots.map((slot, i) => ({ id: idOf(slot), distance: v.distances[i]! })),
      q.alpha,
    );
    return {
      modeUsed,
      hits: fused.slice(0, q.depth).map((f) => p.hit(slotOf.get(f.id)!, f.score, { textScore: f.textScore, vectorDistance: f.distance })),
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
        contentBytes += p.texts.charsOf(slot) + c.title.length + c.url.length;
      }
    }
    const total = p.slotOf.size || 1;
    const share = chunks / total;
    const sizeBytes = Math.round(contentBytes + share * (p.keyword.sizeBytes + p.vectors.sizeBytes));
    return { documents, chunks, vectors, sizeBytes };
  }

  /** Accounts that have a partition. */
  accounts(): number[] {
    return [...this.partitions.keys()];
  }

  /** Forgets an account's partition (before it is rebuilt from MongoDB). */
  dropPartition(accountId: number) {
    const p = this.partitions.get(accountId);
    if (!p) return;
    if (p.busy) throw new Error(`partition ${accountId} is being snapshotted`);
    p.texts.close();
    this.partitions.delete(accountId);
  }

  /**
   * Writes a snapshot of one account's partition (an empty one if it has none) into `dir`, stamped with the
   * MongoDB state it reflects. The caller must make sure no write of that account is between its MongoDB
   * write and its index update when this is called (the stamp would claim a state the partition lacks).
   * Mutations of the partition wait until the snapshot is written; searches go on. Files are written under
   * temporary names and renamed, the graph before the file that names it, so a crash leaves the previous
   * snapshot or the new one. From then on the partition reads chunk text from the new file.
   */
  async writeSnapshot(accountId: number, dir: string, stamp: SnapshotStamp): Promise<SnapshotWritten> {
    const p = this.partitions.get(accountId);
    if (p?.busy) throw new Error(`a snapshot of partition ${accountId} is already being written`);
    let release = () => {};
    if (p) p.busy = new Promise<void>((resolve) => (release = resolve));
    try {
      return await writePartitionSnapshot(p, accountId, dir, stamp, this.snapshotContext());
    } finally {
      if (p) p.busy = undefined;
      release();
    }
  }

  /**
   * Loads an account's partition from a snapshot directory if the snapshot is whole (every checksum),
   * written by this format and analyzer for these dimensions, and stamped with exactly `expect`. Anything
   * else answers `{ok: false, reason}` and leaves the account without a partition, to be rebuilt from
   * MongoDB.
   */
  async loadSnapshot(accountId: number, dir: string, expect: SnapshotStamp): Promise<SnapshotLoad> {
    if (this.partitions.has(accountId)) throw new Error(`partition ${accountId} is already loaded`);
    const { partition, ...load } = await readPartitionSnapshot(accountId, dir, expect, this.snapshotContext());
    if (!partition) return load;
    if (this.partitions.has(accountId)) {
      partition.texts.close();
      return { ok: false, reason: `corrupt: partition ${accountId} was created while its snapshot loaded` };
    }
    this.partitions.set(accountId, partition);
    return load;
  }

  private snapshotContext(): SnapshotContext {
    return { dimensions: this.options.dimensions, textOnDisk: (chars) => this.textOnDisk(chars), newPartition: () => this.newPartition() };
  }

  /** Partition internals for the benchmark (recall of the graph against exact search). */
  vectorIndexOf(accountId: number): VectorIndex | undefined {
    return this.partitions.get(accountId)?.vectors;
  }
}
