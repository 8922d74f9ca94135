import { KeywordIndex } from "../bm25";
import { MetadataIndex } from "./metadata-index";
import type { ChunkHit, ChunkIdentity, IndexedChunk } from "../port";
import { ChunkTexts } from "./text-store";
import { terms } from "../tokenizer";
import { VectorIndex } from "../vectors";

export interface DocumentEntry {
  id: string;
  /** Dense number of the document in its partition (filters mark documents in arrays by it); not reused while the process runs. */
  number: number;
  sourceId: number;
  chunks: Set<number>;
  /** The document's latest title and url, so its chunks share one string each. */
  title: string;
  url: string;
  /** The document's metadata (what filters compare), held once for all its chunks: the latest upsert's or setDocumentMetadata's. */
  metadata: Record<string, unknown> | null;
}

/** A slot's chunk: what a hit shows, its document's number, and when it was indexed (filters compare it). */
export interface SlotChunk extends ChunkIdentity {
  doc: number;
  indexedAt: number;
}

export type VectorOptions = ConstructorParameters<typeof VectorIndex>[1];

/** The chunk table of a snapshot (strings and small numbers; the big arrays are typed sections). */
export interface ChunkTable {
  ids: string[];
  documents: [string, number][];
  /** Per document (as `documents`). */
  metadata: (Record<string, unknown> | null)[];
  doc: number[];
  position: number[];
  strings: string[];
  title: number[];
  url: number[];
  /** Each chunk's character range in its document (-1: not known); absent in snapshots written before ranges. */
  start?: number[];
  end?: number[];
  indexedAt: number[];
}

/** One account's chunks: slot tables plus a keyword and a vector index over the same slots. */
export class Partition {
  readonly slotOf = new Map<string, number>();
  /**
   * Per slot; its length is the next slot. Slots are not reused while the process runs (a removed chunk's
   * postings stay until compaction); a restart from a snapshot numbers the live ones densely again.
   */
  readonly chunks: (SlotChunk | undefined)[] = [];
  /**
   * Each slot's document number (-1: none), typed: a filter tests it for every posting a keyword query walks,
   * where reading the chunk object would be a cache miss each (keyword p99 under a 1% filter 2.4x unfiltered).
   */
  docOf = new Int32Array(1024).fill(-1);
  readonly documents = new Map<string, DocumentEntry>();
  /** Documents by number; a removed one leaves a hole. */
  readonly byNumber: (DocumentEntry | undefined)[] = [];
  readonly metadata = new MetadataIndex(() => this.numberedMetadata());
  keyword = new KeywordIndex();
  readonly vectors: VectorIndex;
  readonly texts = new ChunkTexts();
  /** Set while a snapshot of this partition is being written; mutations wait for it. */
  busy?: Promise<void>;

  constructor(dimensions: number, vectorOptions: VectorOptions) {
    this.vectors = new VectorIndex(dimensions, vectorOptions);
  }

  document(id: string, sourceId: number, title: string, url: string, metadata: Record<string, unknown> | null): DocumentEntry {
    let doc = this.documents.get(id);
    if (!doc) {
      this.documents.set(id, (doc = { id, number: this.byNumber.length, sourceId, chunks: new Set(), title, url, metadata: null }));
      this.byNumber.push(doc);
    }
    if (doc.title !== title) doc.title = title;
    if (doc.url !== url) doc.url = url;
    this.setMetadata(doc, metadata);
    return doc;
  }

  setMetadata(doc: DocumentEntry, metadata: Record<string, unknown> | null) {
    if (doc.metadata === metadata) return;
    this.metadata.change(doc.number, doc.metadata, metadata);
    doc.metadata = metadata;
  }

  private *numberedMetadata(): Iterable<[number, Record<string, unknown> | null]> {
    for (const doc of this.byNumber) if (doc) yield [doc.number, doc.metadata];
  }

  upsert(chunk: IndexedChunk) {
    if (this.slotOf.has(chunk.id)) this.remove(chunk.id);
    const slot = this.chunks.length;
    const doc = this.document(chunk.documentId, chunk.sourceId, chunk.title, chunk.url, chunk.metadata ?? null);
    this.slotOf.set(chunk.id, slot);
    this.place(slot, {
      id: chunk.id, sourceId: chunk.sourceId, documentId: doc.id, position: chunk.position, title: doc.title, url: doc.url,
      chunkStart: chunk.chunkStart ?? null, chunkEnd: chunk.chunkEnd ?? null, doc: doc.number, indexedAt: chunk.indexedAt,
    });
    doc.chunks.add(slot);
    this.keyword.add(slot, terms(chunk.title), terms(chunk.content));
    this.texts.set(slot, chunk.content);
    if (chunk.vector) this.vectors.set(slot, chunk.vector);
  }

  /** Puts a chunk in its slot. */
  place(slot: number, c: SlotChunk) {
    this.chunks[slot] = c;
    if (slot >= this.docOf.length) {
      const grown = new Int32Array(Math.max(2 * this.docOf.length, slot + 1)).fill(-1);
      grown.set(this.docOf);
      this.docOf = grown;
    }
    this.docOf[slot] = c.doc;
  }

  private forget(slot: number): ChunkIdentity {
    const c = this.chunks[slot]!;
    this.slotOf.delete(c.id);
    this.chunks[slot] = undefined;
    this.docOf[slot] = -1;
    const doc = this.documents.get(c.documentId);
    doc?.chunks.delete(slot);
    if (doc && !doc.chunks.size) {
      this.setMetadata(doc, null);
      this.documents.delete(c.documentId);
      this.byNumber[doc.number] = undefined;
    }
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
    const metadata: (Record<string, unknown> | null)[] = [];
    const documentIds = new Map<string, number>();
    const t: ChunkTable = { ids: [], documents, metadata, doc: [], position: [], strings, title: [], url: [], start: [], end: [], indexedAt: [] };
    for (const slot of live) {
      const c = this.chunks[slot]!;
      let d = documentIds.get(c.documentId);
      if (d === undefined) {
        documentIds.set(c.documentId, (d = documents.push([c.documentId, c.sourceId]) - 1));
        metadata.push(this.documents.get(c.documentId)!.metadata);
      }
      t.ids.push(c.id);
      t.doc.push(d);
      t.position.push(c.position);
      t.title.push(intern(c.title));
      t.url.push(intern(c.url));
      t.start!.push(c.chunkStart ?? -1);
      t.end!.push(c.chunkEnd ?? -1);
      t.indexedAt.push(c.indexedAt);
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
  readonly chunkStart: number | null;
  readonly chunkEnd: number | null;
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
    this.chunkStart = c.chunkStart ?? null;
    this.chunkEnd = c.chunkEnd ?? null;
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
export function hasVectorsInScope(p: Partition, sources: Set<number> | undefined): boolean {
  if (!p.vectors.size) return false;
  if (!sources) return true;
  for (const doc of p.documents.values()) {
    if (!sources.has(doc.sourceId)) continue;
    for (const slot of doc.chunks) if (p.vectors.has(slot)) return true;
  }
  return false;
}

export function emptyTable(): ChunkTable {
  return { ids: [], documents: [], metadata: [], doc: [], position: [], strings: [], title: [], url: [], indexedAt: [] };
}
