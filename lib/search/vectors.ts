import { HierarchicalNSW } from "hnswlib-node";
import { DOT_BATCH, kernelFor } from "./int8-dot";
import type { SnapshotWriter } from "./snapshot-file";

/** Below this many vectors in a partition an exact scan is as fast as a graph search, and exact. */
export const FLAT_SEARCH_CUTOFF = 5_000;
/** HNSW graph degree. */
export const HNSW_M = 16;
/** HNSW build beam; 100 keeps recall@10 near 0.99 at 100k while halving build time against the usual 200. */
export const HNSW_EF_CONSTRUCTION = 100;
/** Search beam floor; the beam is never narrower than the number of neighbours asked for. */
export const HNSW_EF_SEARCH = 128;

export interface VectorMatches {
  slots: number[];
  /** Cosine distance (1 - cosine similarity), 0..2, ascending. */
  distances: number[];
}

/** Unit-length copy of a vector (cosine similarity then equals the dot product). */
export function normalize(vector: ArrayLike<number>): Float32Array {
  const out = new Float32Array(vector.length);
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

/** A Float32 vector as bytes for MongoDB (4 bytes a dimension, little-endian as the platform is). */
export function vectorToBuffer(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** The inverse of vectorToBuffer, for a Buffer or the BSON Binary a lean query returns; copies, so nothing aliases driver memory. */
export function bufferToVector(stored: Uint8Array | { buffer: Uint8Array }): Float32Array {
  const bytes = stored instanceof Uint8Array ? stored : stored.buffer;
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

/** Rows per page of vector storage (pages are allocated as rows are used, never copied to grow). */
const PAGE_BITS = 10;
const PAGE_ROWS = 1 << PAGE_BITS;
const PAGE_MASK = PAGE_ROWS - 1;

/** What a snapshot holds besides the vectors themselves (see VectorIndex.writeSections and restore). */
export interface VectorLayout {
  /** Slots that have a vector, ascending (as the caller numbers them now). */
  slots: Int32Array;
  /** The row (and graph label) of each of those vectors. */
  rows: Int32Array;
  /** Rows ever used (the graph's labels are below it). */
  rowCount: number;
  /** Free rows, in the order they are reused (last first). */
  free: Int32Array;
}

/**
 * Vectors of one partition by slot: an exact scan while the partition is small or a filter is selective,
 * an HNSW graph (hnswlib, inner product on unit vectors = cosine) once it is large. Distances are cosine
 * distances, as Typesense reports vector_distance.
 *
 * Vectors live in rows, which are the graph's labels: a removed vector's row is marked deleted in the graph
 * and the next new vector takes it over (hnswlib updates the element in place and repairs its links), so
 * neither the graph nor the copies grow with churn, only with the most vectors ever held at once; and slots
 * (the partition's numbering) can be renumbered without touching the graph.
 *
 * Memory: below the flat cutoff the unit vectors are kept as Float32 (exact scans). Once the graph exists it
 * holds the only full-precision copy; the index keeps an int8 copy (a quarter of the size, one scale per
 * vector) for the scans a selective source or metadata filter needs, which hnswlib cannot serve well (its
 * filtered search walks most of the graph when few labels pass) nor cheaply (getPoint costs tens of
 * microseconds). They run in WebAssembly SIMD (int8-dot.ts): a Float32 copy would be barely faster in
 * JavaScript (0.43 against 0.52 ms for 1,000 vectors) and cost 205 MB at 100k 512-d vectors, the int8 one
 * 51 MB. Int8 distances are within about 0.0015 of the exact ones.
 */
export class VectorIndex {
  /** Row of each slot, -1 without a vector. */
  private rowOf = new Int32Array(PAGE_ROWS).fill(-1);
  /** Slot of each row, -1 when free. */
  private slotOfRow = new Int32Array(PAGE_ROWS).fill(-1);
  private rowCount = 0;
  private free: number[] = [];
  private count = 0;
  private flat: Float32Array[] | undefined = [];
  private quantized: Int8Array[] = [];
  private scales = new Float32Array(PAGE_ROWS);
  private graph?: HierarchicalNSW;
  private graphCapacity = 0;

  constructor(
    readonly dimensions: number,
    private readonly options: { flatCutoff?: number; efSearch?: number; efConstruction?: number; m?: number } = {},
  ) {}

  get size(): number {
    return this.count;
  }

  get usesGraph(): boolean {
    return this.graph !== undefined;
  }

  /** Bytes of vector data: Float32 copies (flat) or the graph (vectors and links) plus the int8 copies. */
  get sizeBytes(): number {
    const d = this.dimensions;
    if (!this.graph) return this.rowCount * d * 4;
    return this.rowCount * (d * 4 + (this.options.m ?? HNSW_M) * 2 * 4 + 8) + this.rowCount * (d + 4);
  }

  has(slot: number): boolean {
    return slot < this.rowOf.length && this.rowOf[slot]! >= 0;
  }

  private ensureSlot(slot: number) {
    if (slot < this.rowOf.length) return;
    let n = this.rowOf.length;
    while (n <= slot) n *= 2;
    const rowOf = new Int32Array(n).fill(-1);
    rowOf.set(this.rowOf);
    this.rowOf = rowOf;
  }

  private ensureRow(row: number) {
    if (row >= this.slotOfRow.length) {
      let n = this.slotOfRow.length;
      while (n <= row) n *= 2;
      const slotOfRow = new Int32Array(n).fill(-1);
      slotOfRow.set(this.slotOfRow);
      this.slotOfRow = slotOfRow;
      const scales = new Float32Array(n);
      scales.set(this.scales);
      this.scales = scales;
    }
    const page = row >> PAGE_BITS;
    const pages: (Float32Array | Int8Array)[] = this.flat ?? this.quantized;
    while (pages.length <= page) pages.push(this.flat ? new Float32Array(PAGE_ROWS * this.dimensions) : new Int8Array(PAGE_ROWS * this.dimensions));
  }

  private writeFlat(row: number, unit: Float32Array) {
    this.flat![row >> PAGE_BITS]!.set(unit, (row & PAGE_MASK) * this.dimensions);
  }

  private writeQuantized(row: number, unit: ArrayLike<number>) {
    const d = this.dimensions;
    let max = 0;
    for (let i = 0; i < d; i++) max = Math.max(max, Math.abs(unit[i]!));
    const scale = max / 127;
    const page = this.quantized[row >> PAGE_BITS]!;
    const base = (row & PAGE_MASK) * d;
    for (let i = 0; i < d; i++) page[base + i] = scale ? Math.round(unit[i]! / scale) : 0;
    this.scales[row] = scale;
  }

  /** Stores a unit vector for a slot (replacing any previous one). */
  set(slot: number, vector: Float32Array) {
    if (vector.length !== this.dimensions) throw new RangeError(`vector has ${vector.length} dimensions, index has ${this.dimensions}`);
    this.ensureSlot(slot);
    const unit = normalize(vector);
    let row = this.rowOf[slot]!;
    if (row < 0) {
      row = this.free.pop() ?? this.rowCount++;
      this.ensureRow(row);
      this.rowOf[slot] = row;
      this.slotOfRow[row] = slot;
      this.count++;
    }
    if (this.graph) {
      this.writeQuantized(row, unit);
      this.addToGraph(row, unit);
    } else this.writeFlat(row, unit);
    if (!this.graph && this.count > (this.options.flatCutoff ?? FLAT_SEARCH_CUTOFF)) this.buildGraph();
  }

  remove(slot: number) {
    if (!this.has(slot)) return;
    const row = this.rowOf[slot]!;
    this.rowOf[slot] = -1;
    this.slotOfRow[row] = -1;
    this.free.push(row);
    this.count--;
    this.graph?.markDelete(row);
  }

  private newGraph(capacity: number): HierarchicalNSW {
    const graph = new HierarchicalNSW("ip", this.dimensions);
    graph.initIndex(capacity, this.options.m ?? HNSW_M, this.options.efConstruction ?? HNSW_EF_CONSTRUCTION, 100, false);
    return graph;
  }

  /** Moves the flat vectors into a new graph and keeps int8 copies instead of the Float32 ones. */
  private buildGraph() {
    const flat = this.flat!;
    this.graphCapacity = Math.max(PAGE_ROWS, 2 * this.rowCount);
    this.graph = this.newGraph(this.graphCapacity);
    this.flat = undefined;
    this.quantized = [];
    const d = this.dimensions;
    for (let row = 0; row < this.rowCount; row++) {
      this.ensureRow(row);
      if (this.slotOfRow[row]! < 0) continue;
      const unit = flat[row >> PAGE_BITS]!.subarray((row & PAGE_MASK) * d, ((row & PAGE_MASK) + 1) * d);
      this.writeQuantized(row, unit);
      this.addToGraph(row, unit);
    }
  }

  /** Adds a row's vector to the graph, or updates it in place (a reused row is a deleted element). */
  private addToGraph(row: number, unit: Float32Array) {
    const graph = this.graph!;
    if (graph.getCurrentCount() >= this.graphCapacity) {
      this.graphCapacity *= 2;
      graph.resizeIndex(this.graphCapacity);
    }
    graph.addPoint(Array.from(unit), row, false);
  }

  /** Cosine distances from a unit query to the given slots (exact when flat, int8 with the graph). */
  private distances(q: Float32Array, slots: ArrayLike<number>): Float64Array {
    const d = this.dimensions;
    const out = new Float64Array(slots.length);
    if (this.flat) {
      for (let n = 0; n < slots.length; n++) {
        const row = this.rowOf[slots[n]!]!;
        const page = this.flat[row >> PAGE_BITS]!;
        const base = (row & PAGE_MASK) * d;
        let dot = 0;
        for (let i = 0; i < d; i++) dot += q[i]! * page[base + i]!;
        out[n] = 1 - dot;
      }
      return out;
    }
    const kernel = kernelFor(d);
    const qscale = kernel.query(q);
    const { vectors, stride } = kernel;
    for (let first = 0; first < slots.length; first += DOT_BATCH) {
      const n = Math.min(DOT_BATCH, slots.length - first);
      for (let i = 0; i < n; i++) {
        const row = this.rowOf[slots[first + i]!]!;
        const base = (row & PAGE_MASK) * d;
        vectors.set(this.quantized[row >> PAGE_BITS]!.subarray(base, base + d), i * stride);
      }
      const dots = kernel.run(n);
      for (let i = 0; i < n; i++) out[first + i] = 1 - dots[i]! * qscale * this.scales[this.rowOf[slots[first + i]!]!]!;
    }
    return out;
  }

  /** The k nearest of the given slots by a scan (ties: lower slot first). */
  private scan(query: Float32Array, k: number, slots: number[]): VectorMatches {
    const dist = this.distances(normalize(query), slots);
    // Max-heap of candidate positions by (distance, slot): the root is the worst of the best k so far.
    const heap: number[] = [];
    const worse = (a: number, b: number) => dist[a]! > dist[b]! || (dist[a] === dist[b] && slots[a]! > slots[b]!);
    const down = (i: number) => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && worse(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && worse(heap[r]!, heap[m]!)) m = r;
        if (m === i) return;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    };
    for (let n = 0; n < slots.length; n++) {
      if (heap.length < k) {
        heap.push(n);
        for (let i = heap.length - 1; i > 0; ) {
          const p = (i - 1) >> 1;
          if (!worse(heap[i]!, heap[p]!)) break;
          [heap[i], heap[p]] = [heap[p]!, heap[i]!];
          i = p;
        }
      } else if (k > 0 && worse(heap[0]!, n)) {
        heap[0] = n;
        down(0);
      }
    }
    heap.sort((a, b) => dist[a]! - dist[b]! || slots[a]! - slots[b]!);
    return { slots: heap.map((i) => slots[i]!), distances: heap.map((i) => dist[i]!) };
  }

  /** Slots with a vector that `accept` allows, ascending; stops (returning undefined) once more than `limit` pass. */
  private allowed(accept: ((slot: number) => boolean) | undefined, limit = Number.POSITIVE_INFINITY): number[] | undefined {
    const out: number[] = [];
    for (let slot = 0; slot < this.rowOf.length; slot++) {
      if (this.rowOf[slot]! < 0 || (accept && !accept(slot))) continue;
      if (out.length >= limit) return undefined;
      out.push(slot);
    }
    return out;
  }

  /** Nearest neighbours among slots `accept` allows by a full scan (exact below the graph cutoff, int8 above). */
  exact(query: Float32Array, k: number, accept?: (slot: number) => boolean): VectorMatches {
    return this.scan(query, k, this.allowed(accept)!);
  }

  /**
   * The k nearest slots within maxDistance. Uses the graph when there is one and the filter (if any)
   * leaves more than sqrt(flat cutoff x vectors); otherwise scans. `within`, given with `accept`, lists the slots it
   * allows (any order; undefined when more than `limit` do): a metadata filter's scope knows them without
   * testing every slot.
   */
  search(
    query: Float32Array,
    k: number,
    maxDistance = 2,
    accept?: (slot: number) => boolean,
    within?: (limit: number) => number[] | undefined,
  ): VectorMatches {
    if (!this.count || k < 1) return { slots: [], distances: [] };
    let result: VectorMatches;
    // A filtered graph search explores about count / allowed nodes to find ef that pass, a scan costs what it
    // reads: their costs cross near the geometric mean of the cutoff and the partition (22,000 at 100k, 5,000
    // when the graph is built), measured with the SIMD scan.
    const limit = this.graph ? Math.sqrt((this.options.flatCutoff ?? FLAT_SEARCH_CUTOFF) * this.count) : Number.POSITIVE_INFINITY;
    const listed = accept && within ? within(limit)?.filter((slot) => this.rowOf[slot]! >= 0) : undefined;
    const candidates = listed ?? (!this.graph || (accept && !within) ? this.allowed(accept, limit) : undefined);
    if (candidates) {
      result = this.scan(query, k, candidates);
    } else {
      const graph = this.graph!;
      const want = Math.min(k, this.count);
      graph.setEf(Math.max(want, this.options.efSearch ?? HNSW_EF_SEARCH));
      const slotOfRow = this.slotOfRow;
      const filter = accept ? (label: number) => slotOfRow[label]! >= 0 && accept(slotOfRow[label]!) : undefined;
      const res = graph.searchKnn(Array.from(normalize(query)), want, filter);
      result = { slots: res.neighbors.map((row) => slotOfRow[row]!), distances: res.distances };
    }
    let n = 0;
    while (n < result.slots.length && result.distances[n]! <= maxDistance) n++;
    return { slots: result.slots.slice(0, n), distances: result.distances.slice(0, n) };
  }

  /** A slot's unit vector (a copy; dequantised once the graph holds the full-precision one). */
  vectorOf(slot: number): Float32Array | undefined {
    if (!this.has(slot)) return undefined;
    const d = this.dimensions;
    const row = this.rowOf[slot]!;
    const base = (row & PAGE_MASK) * d;
    if (this.flat) return this.flat[row >> PAGE_BITS]!.slice(base, base + d);
    const page = this.quantized[row >> PAGE_BITS]!;
    const out = new Float32Array(d);
    for (let i = 0; i < d; i++) out[i] = page[base + i]! * this.scales[row]!;
    return out;
  }

  /**
   * Writes the vectors to a snapshot: `vectors.slots` (ascending, numbered by `slotNumber`), `vectors.rows`,
   * `vectors.free`, then `vectors.flat` (Float32) or `vectors.int8` and `vectors.scales`, in slot order.
   * The graph goes to its own file (writeGraph). Returns the layout's counts for the header.
   */
  async writeSections(writer: SnapshotWriter): Promise<{ vectors: number; rowCount: number }> {
    const slots = Int32Array.from(this.allowed(undefined)!);
    const rows = Int32Array.from(slots, (slot) => this.rowOf[slot]!);
    const d = this.dimensions;
    await writer.section("vectors.slots", slots);
    await writer.section("vectors.rows", rows);
    await writer.section("vectors.free", Int32Array.from(this.free));
    const flat = this.flat;
    writer.begin(flat ? "vectors.flat" : "vectors.int8");
    for (const row of rows) {
      const base = (row & PAGE_MASK) * d;
      const page = flat ? flat[row >> PAGE_BITS]! : this.quantized[row >> PAGE_BITS]!;
      const vector = page.subarray(base, base + d);
      await writer.write(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
    }
    writer.end();
    if (!flat) await writer.section("vectors.scales", Float32Array.from(rows, (row) => this.scales[row]!));
    return { vectors: slots.length, rowCount: this.rowCount };
  }

  /** Writes the graph with hnswlib (in its thread pool); no vector may change until it resolves. */
  async writeGraph(file: string) {
    if (!this.graph) throw new Error("no graph to write");
    await this.graph.writeIndex(file);
  }

  /**
   * Fills an empty index from snapshot sections. `readVectors` hands over the vectors in `layout.slots`
   * order, in pieces (so a large int8 section goes straight into pages); with `graphFile` the graph is read
   * too. Slots may have been renumbered since the snapshot was written (rows and the graph are not).
   */
  async restore(
    layout: VectorLayout,
    kind: "flat" | "quantized",
    scales: Float32Array | undefined,
    readVectors: (unitBytes: number, each: (bytes: Uint8Array, at: number) => void) => void,
    graphFile: string | undefined,
  ) {
    if (this.count || this.rowCount || this.graph) throw new Error("restore needs an empty vector index");
    const { slots, rows, rowCount, free } = layout;
    const d = this.dimensions;
    if (rows.length !== slots.length) throw new RangeError("vector rows disagree with their slots");
    if (kind === "quantized") {
      if (!graphFile || !scales || scales.length !== slots.length) throw new RangeError("an int8 vector section needs its scales and a graph");
      this.flat = undefined;
    }
    if (rowCount) this.ensureRow(rowCount - 1);
    this.rowCount = rowCount;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      const row = rows[i]!;
      if (slot < 0 || (i && slot <= slots[i - 1]!)) throw new RangeError("vector slots are not ascending");
      if (!(row >= 0 && row < rowCount) || this.slotOfRow[row] !== -1) throw new RangeError(`vector row ${row} is out of range or taken twice`);
      this.ensureSlot(slot);
      this.rowOf[slot] = row;
      this.slotOfRow[row] = slot;
      if (scales) this.scales[row] = scales[i]!;
    }
    for (const row of free) {
      if (!(row >= 0 && row < rowCount) || this.slotOfRow[row] !== -1) throw new RangeError(`free row ${row} is out of range or in use`);
    }
    if (free.length + slots.length !== rowCount) throw new RangeError("rows are neither in use nor free");
    this.free = Array.from(free);
    const bytesPerVector = kind === "flat" ? d * 4 : d;
    let seen = 0;
    readVectors(bytesPerVector, (bytes, at) => {
      if (at % bytesPerVector || bytes.length % bytesPerVector) throw new RangeError("vector section is misaligned");
      const first = at / bytesPerVector;
      const n = bytes.length / bytesPerVector;
      if (first + n > rows.length) throw new RangeError("vector section has more vectors than slots");
      for (let i = 0; i < n; i++) {
        const row = rows[first + i]!;
        const base = (row & PAGE_MASK) * d;
        if (kind === "flat") {
          const copy = new Uint8Array(bytes.buffer, bytes.byteOffset + i * bytesPerVector, bytesPerVector).slice();
          this.flat![row >> PAGE_BITS]!.set(new Float32Array(copy.buffer), base);
        } else {
          this.quantized[row >> PAGE_BITS]!.set(new Int8Array(bytes.buffer, bytes.byteOffset + i * bytesPerVector, bytesPerVector), base);
        }
      }
      seen += n;
    });
    if (seen !== rows.length) throw new RangeError("vector section has fewer vectors than slots");
    this.count = slots.length;
    if (graphFile) {
      const graph = new HierarchicalNSW("ip", d);
      await graph.readIndex(graphFile, false);
      if (graph.getCurrentCount() > rowCount) throw new RangeError(`graph has ${graph.getCurrentCount()} elements for ${rowCount} rows`);
      this.graph = graph;
      this.graphCapacity = graph.getMaxElements();
    }
  }
}
