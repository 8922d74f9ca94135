import { createHash, randomBytes } from "node:crypto";
import { existsSync, openSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import path from "node:path";
import { KeywordIndex, TITLE_WEIGHT } from "./bm25";
import { fuseLists } from "./fusion";
import type { ChunkHit, ChunkIdentity, IndexQuery, IndexResult, IndexStats, IndexedChunk, SearchIndex } from "./port";
import { fileChecksum, removeOthers, SnapshotReader, SnapshotWriter, syncFile } from "./snapshot-file";
import { ChunkTexts } from "./text-store";
import { analyzerFingerprint, terms } from "./tokenizer";
import { VectorIndex } from "./vectors";

/** Version of the snapshot layout; a snapshot of another version is rebuilt from MongoDB. */
export const SNAPSHOT_FORMAT = 1;
const PARTITION_FILE = "partition.bin";

/** What the analyzer and the keyword weighting bake into postings; part of every snapshot's header. */
const ANALYZER = createHash("sha256").update(analyzerFingerprint()).update(`title-weight:${TITLE_WEIGHT}`).digest("hex").slice(0, 16);

interface DocumentEntry {
  id: string;
  sourceId: number;
  chunks: Set<number>;
  /** The document's latest title and url, so its chunks share one string each. */
  title: string;
  url: string;
}

type VectorOptions = ConstructorParameters<typeof VectorIndex>[1];

/** The state a snapshot reflects: the database epoch and the account's write generation in MongoDB. */
export interface SnapshotStamp {
  epoch: string;
  generation: number;
}

export interface SnapshotWritten {
  bytes: number;
  chunks: number;
  vectors: number;
  graph: boolean;
  ms: number;
}

export type SnapshotLoad =
  | { ok: true; chunks: number; vectors: number; ms: number }
  | { ok: false; reason: string };

interface SnapshotHeader {
  format: number;
  analyzer: string;
  accountId: number;
  epoch: string;
  generation: number;
  dimensions: number;
  slotCount: number;
  chunks: number;
  vectors: number;
  /** Vector rows ever used (graph labels are below it). */
  rowCount: number;
  graph: { file: string; size: number; crc: number } | null;
}

/** The chunk table of a snapshot (strings and small numbers; the big arrays are typed sections). */
interface ChunkTable {
  ids: string[];
  documents: [string, number][];
  doc: number[];
  position: number[];
  strings: string[];
  title: number[];
  url: number[];
}

/** One account's chunks: slot tables plus a keyword and a vector index over the same slots. */
class Partition {
  readonly slotOf = new Map<string, number>();
  /**
   * Per slot; its length is the next slot. Slots are not reused while the process runs (a removed chunk's
   * postings stay until compaction); a restart from a snapshot numbers the live ones densely again.
   */
  readonly chunks: (ChunkIdentity | undefined)[] = [];
  readonly documents = new Map<string, DocumentEntry>();
  keyword = new KeywordIndex();
  readonly vectors: VectorIndex;
  readonly texts = new ChunkTexts();
  /** Set while a snapshot of this partition is being written; mutations wait for it. */
  busy?: Promise<void>;

  constructor(dimensions: number, vectorOptions: VectorOptions) {
    this.vectors = new VectorIndex(dimensions, vectorOptions);
  }

  private document(id: string, sourceId: number, title: string, url: string): DocumentEntry {
    let doc = this.documents.get(id);
    if (!doc) this.documents.set(id, (doc = { id, sourceId, chunks: new Set(), title, url }));
    if (doc.title !== title) doc.title = title;
    if (doc.url !== url) doc.url = url;
    return doc;
  }

  upsert(chunk: IndexedChunk) {
    if (this.slotOf.has(chunk.id)) this.remove(chunk.id);
    const slot = this.chunks.length;
    const doc = this.document(chunk.documentId, chunk.sourceId, chunk.title, chunk.url);
    this.slotOf.set(chunk.id, slot);
    this.chunks[slot] = { id: chunk.id, sourceId: chunk.sourceId, documentId: doc.id, position: chunk.position, title: doc.title, url: doc.url };
    doc.chunks.add(slot);
    this.keyword.add(slot, terms(chunk.title), terms(chunk.content));
    this.texts.set(slot, chunk.content);
    if (chunk.vector) this.vectors.set(slot, chunk.vector);
  }

  private forget(slot: number): ChunkIdentity {
    const c = this.chunks[slot]!;
    this.slotOf.delete(c.id);
    this.chunks[slot] = undefined;
    const doc = this.documents.get(c.documentId);
    doc?.chunks.delete(slot);
    if (doc && !doc.chunks.size) this.documents.delete(c.documentId);
    this.vectors.remove(slot);
    return c;
  }

  remove(id: string) {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    const c = this.forget(slot);
    // The index keeps no term list per chunk: the chunk is tokenised again to find its terms.
    this.keyword.remove(slot, terms(c.title), terms(this.texts.get(slot)));
    this.texts.delete(slot);
  }

  /** Removes many chunks at once (a whole source): document frequencies are recounted once. */
  removeSlots(slots: number[]) {
    if (slots.length < 64) {
      for (const slot of slots) this.remove(this.chunks[slot]!.id);
      return;
    }
    for (const slot of slots) {
      this.forget(slot);
      this.texts.delete(slot);
    }
    this.keyword.removeMany(slots);
  }

  hit(slot: number, score: number, extra: Partial<ChunkHit>): ChunkHit {
    return new StoredHit(this.chunks[slot]!, this.texts, slot, score, extra.textScore, extra.vectorDistance);
  }

  /** Live slots, ascending. */
  liveSlots(): Int32Array {
    const live = new Int32Array(this.slotOf.size);
    let n = 0;
    for (let slot = 0; slot < this.chunks.length; slot++) if (this.chunks[slot]) live[n++] = slot;
    return live;
  }

  table(live: Int32Array): ChunkTable {
    const strings: string[] = [];
    const stringIds = new Map<string, number>();
    const intern = (s: string) => {
      let id = stringIds.get(s);
      if (id === undefined) stringIds.set(s, (id = strings.push(s) - 1));
      return id;
    };
    const documents: [string, number][] = [];
    const documentIds = new Map<string, number>();
    const t: ChunkTable = { ids: [], documents, doc: [], position: [], strings, title: [], url: [] };
    for (const slot of live) {
      const c = this.chunks[slot]!;
      let d = documentIds.get(c.documentId);
      if (d === undefined) documentIds.set(c.documentId, (d = documents.push([c.documentId, c.sourceId]) - 1));
      t.ids.push(c.id);
      t.doc.push(d);
      t.position.push(c.position);
      t.title.push(intern(c.title));
      t.url.push(intern(c.url));
    }
    return t;
  }
}

/**
 * A ranked chunk whose text is read (from the snapshot file, once one exists) only when `content` is first
 * read: a ranking has up to 250 hits, a page of results shows a few of them. A class with a fixed shape (an
 * accessor defined per object made every young-generation collection several times slower).
 */
class StoredHit implements ChunkHit {
  readonly id: string;
  readonly sourceId: number;
  readonly documentId: string;
  readonly position: number;
  readonly title: string;
  readonly url: string;
  #texts: ChunkTexts;
  #slot: number;
  #content: string | undefined = undefined;

  constructor(
    c: ChunkIdentity,
    texts: ChunkTexts,
    slot: number,
    readonly score: number,
    readonly textScore: number | undefined,
    readonly vectorDistance: number | undefined,
  ) {
    this.id = c.id;
    this.sourceId = c.sourceId;
    this.documentId = c.documentId;
    this.position = c.position;
    this.title = c.title;
    this.url = c.url;
    this.#texts = texts;
    this.#slot = slot;
  }

  get content(): string {
    return (this.#content ??= this.#texts.get(this.#slot));
  }

  toJSON() {
    return { ...this, content: this.content };
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
    const started = Date.now();
    const p = this.partitions.get(accountId);
    if (p?.busy) throw new Error(`a snapshot of partition ${accountId} is already being written`);
    let release = () => {};
    if (p) p.busy = new Promise<void>((resolve) => (release = resolve));
    try {
      await mkdir(dir, { recursive: true });
      const keep = new Set([PARTITION_FILE]);
      let graph: SnapshotHeader["graph"] = null;
      if (p?.vectors.usesGraph) {
        const file = `graph-${randomBytes(6).toString("hex")}.hnsw`;
        const temp = path.join(dir, `${file}.tmp`);
        await p.vectors.writeGraph(temp);
        await syncFile(temp);
        const sum = await fileChecksum(temp);
        await rename(temp, path.join(dir, file));
        graph = { file, ...sum };
        keep.add(file);
      }
      const target = path.join(dir, PARTITION_FILE);
      const writer = await SnapshotWriter.create(target);
      let live: Int32Array<ArrayBufferLike> = new Int32Array(0);
      let text: { offsets: Float64Array<ArrayBufferLike>; lengths: Int32Array<ArrayBufferLike> } = { offsets: new Float64Array(0), lengths: new Int32Array(0) };
      let bytes: number;
      let vectorCount = 0;
      let rowCount = 0;
      try {
        live = p ? p.liveSlots() : live;
        text = p ? await p.texts.write(writer, live) : await new ChunkTexts().write(writer, live);
        await writer.section("text.offsets", text.offsets);
        await writer.section("text.lengths", text.lengths);
        await writer.section("text.chars", Int32Array.from(live, (slot) => p!.texts.charsOf(slot)));
        await writer.section("chunks.live", live);
        await writer.section("chunks.table", Buffer.from(JSON.stringify(p ? p.table(live) : emptyTable()), "utf8"));
        const keyword = (p?.keyword ?? new KeywordIndex()).snapshot();
        await writer.section("keyword.vocabulary", Buffer.from(JSON.stringify(keyword.vocabulary), "utf8"));
        await writer.section("keyword.offsets", keyword.offsets);
        await writer.section("keyword.slots", keyword.slots);
        await writer.section("keyword.tfs", keyword.tfs);
        await writer.section("keyword.lengths", p ? p.keyword.lengthsOf(live) : new Float32Array(0));
        ({ vectors: vectorCount, rowCount } = await (p?.vectors ?? new VectorIndex(this.options.dimensions)).writeSections(writer));
        const header: SnapshotHeader = {
          format: SNAPSHOT_FORMAT,
          analyzer: ANALYZER,
          accountId,
          epoch: stamp.epoch,
          generation: stamp.generation,
          dimensions: this.options.dimensions,
          slotCount: p ? p.chunks.length : 0,
          chunks: live.length,
          vectors: vectorCount,
          rowCount,
          graph,
        };
        bytes = await writer.commit({ ...header, writtenAt: new Date().toISOString() });
      } catch (err) {
        await writer.abort();
        throw err;
      }
      if (p && (p.texts.onDisk || this.textOnDisk(p.texts.liveChars))) p.texts.adopt(openSync(target, "r"), live, text.offsets, text.lengths);
      await removeOthers(dir, keep);
      return { bytes: bytes + (graph?.size ?? 0), chunks: live.length, vectors: vectorCount, graph: graph !== null, ms: Date.now() - started };
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
    const started = Date.now();
    if (this.partitions.has(accountId)) throw new Error(`partition ${accountId} is already loaded`);
    const file = path.join(dir, PARTITION_FILE);
    if (!existsSync(file)) return { ok: false, reason: "missing: no snapshot" };
    let reader: SnapshotReader | undefined;
    try {
      reader = SnapshotReader.open(file);
      const h = reader.header as unknown as SnapshotHeader;
      if (h.format !== SNAPSHOT_FORMAT) return fail(reader, `incompatible: snapshot format ${h.format}, expected ${SNAPSHOT_FORMAT}`);
      if (h.analyzer !== ANALYZER) return fail(reader, "incompatible: written by another analyzer");
      if (h.dimensions !== this.options.dimensions) return fail(reader, `incompatible: ${h.dimensions} dimensions, expected ${this.options.dimensions}`);
      if (h.accountId !== accountId) return fail(reader, `corrupt: snapshot of account ${h.accountId}`);
      if (h.epoch !== expect.epoch) return fail(reader, "stale: written for another database epoch");
      if (h.generation !== expect.generation) return fail(reader, `stale: generation ${h.generation}, MongoDB is at ${expect.generation}`);

      reader.verify("text");
      const live = reader.int32("chunks.live");
      const offsets = reader.float64("text.offsets");
      const lengths = reader.int32("text.lengths");
      const chars = reader.int32("text.chars");
      const table = reader.json<ChunkTable>("chunks.table");
      const n = live.length;
      const slotCount = h.slotCount;
      if (n !== h.chunks || offsets.length !== n || lengths.length !== n || chars.length !== n) throw new RangeError("chunk sections disagree in length");
      for (const list of [table.ids, table.doc, table.position, table.title, table.url]) if (list.length !== n) throw new RangeError("chunk table disagrees in length");
      const text = reader.info("text");
      for (let i = 0; i < n; i++) {
        const slot = live[i]!;
        if (slot < 0 || slot >= slotCount || (i && slot <= live[i - 1]!)) throw new RangeError("live slots are not ascending within the slot count");
        if (offsets[i]! < text.offset || offsets[i]! + Math.abs(lengths[i]!) > text.offset + text.length) throw new RangeError("chunk text lies outside the text section");
      }

      // Slots are renumbered densely in their order (removed chunks leave no gaps after a restart); the
      // order, and so every tie-break, is kept. Vector rows and graph labels are not slots and stay.
      const renumber = new Int32Array(slotCount).fill(-1);
      live.forEach((slot, i) => (renumber[slot] = i));
      const p = this.newPartition();
      for (let i = 0; i < n; i++) {
        const [documentId, sourceId] = table.documents[table.doc[i]!]!;
        const title = table.strings[table.title[i]!]!;
        const url = table.strings[table.url[i]!]!;
        const id = table.ids[i]!;
        if (p.slotOf.has(id)) throw new RangeError(`chunk ${id} appears twice`);
        let doc = p.documents.get(documentId);
        if (!doc) p.documents.set(documentId, (doc = { id: documentId, sourceId, chunks: new Set(), title, url }));
        doc.chunks.add(i);
        p.slotOf.set(id, i);
        p.chunks[i] = { id, sourceId, documentId, position: table.position[i]!, title, url };
      }
      const postingSlots = reader.int32("keyword.slots");
      for (let i = 0; i < postingSlots.length; i++) {
        const slot = postingSlots[i]!;
        if (!(slot >= 0 && slot < slotCount) || renumber[slot]! < 0) throw new RangeError(`posting of a slot that is not live (${slot})`);
        postingSlots[i] = renumber[slot]!;
      }
      p.keyword = KeywordIndex.restore(
        {
          vocabulary: reader.json<string[]>("keyword.vocabulary"),
          offsets: reader.int32("keyword.offsets"),
          slots: postingSlots,
          tfs: reader.uint16("keyword.tfs"),
        },
        Int32Array.from(live.keys()),
        reader.float32("keyword.lengths"),
        n,
      );
      const vectorSlots = reader.int32("vectors.slots");
      if (vectorSlots.length !== h.vectors) throw new RangeError("vector count disagrees with the header");
      for (let i = 0; i < vectorSlots.length; i++) {
        const slot = vectorSlots[i]!;
        if (!(slot >= 0 && slot < slotCount) || renumber[slot]! < 0) throw new RangeError(`vector of a slot that is not live (${slot})`);
        vectorSlots[i] = renumber[slot]!;
      }
      const layout = { slots: vectorSlots, rows: reader.int32("vectors.rows"), free: reader.int32("vectors.free"), rowCount: h.rowCount };
      const r = reader;
      if (h.graph) {
        const graphFile = path.join(dir, path.basename(h.graph.file));
        const sum = await fileChecksum(graphFile).catch(() => undefined);
        if (!sum || sum.size !== h.graph.size || sum.crc !== h.graph.crc) throw new RangeError("graph file is missing or fails its checksum");
        await p.vectors.restore(layout, "quantized", reader.float32("vectors.scales"), (unit, each) => r.stream("vectors.int8", unit, each), graphFile);
      } else {
        await p.vectors.restore(layout, "flat", undefined, (unit, each) => r.stream("vectors.flat", unit, each), undefined);
      }
      const slots = Int32Array.from(live.keys());
      let textChars = 0;
      for (const c of chars) textChars += c;
      if (this.textOnDisk(textChars)) p.texts.adopt(reader.fd, slots, offsets, lengths, chars);
      else {
        p.texts.load(reader.fd, slots, offsets, lengths);
        reader.close();
      }
      if (this.partitions.has(accountId)) throw new Error(`partition ${accountId} was created while its snapshot loaded`);
      this.partitions.set(accountId, p);
      return { ok: true, chunks: n, vectors: vectorSlots.length, ms: Date.now() - started };
    } catch (err) {
      reader?.close();
      return { ok: false, reason: `corrupt: ${(err as Error).message}` };
    }
  }

  /** Partition internals for the benchmark (recall of the graph against exact search). */
  vectorIndexOf(accountId: number): VectorIndex | undefined {
    return this.partitions.get(accountId)?.vectors;
  }
}

function fail(reader: SnapshotReader, reason: string): SnapshotLoad {
  reader.close();
  return { ok: false, reason };
}

function emptyTable(): ChunkTable {
  return { ids: [], documents: [], doc: [], position: [], strings: [], title: [], url: [] };
}
