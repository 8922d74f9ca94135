import { HierarchicalNSW } from "hnswlib-node";

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

/**
 * Vectors of one partition by slot: an exact scan while the partition is small or a filter is selective,
 * an HNSW graph (hnswlib, inner product on unit vectors = cosine) once it is large. Distances are cosine
 * distances, as Typesense reports vector_distance.
 */
export class VectorIndex {
  private data: Float32Array;
  private present: Uint8Array;
  private count = 0;
  private graph?: HierarchicalNSW;
  private graphCapacity = 0;

  constructor(
    readonly dimensions: number,
    private readonly options: { flatCutoff?: number; efSearch?: number; efConstruction?: number; m?: number } = {},
  ) {
    this.data = new Float32Array(1024 * dimensions);
    this.present = new Uint8Array(1024);
  }

  get size(): number {
    return this.count;
  }

  get usesGraph(): boolean {
    return this.graph !== undefined;
  }

  /** Bytes of vector data (the graph holds a second copy once built) plus graph links. */
  get sizeBytes(): number {
    const vectors = this.count * this.dimensions * 4;
    return vectors + (this.graph ? vectors + this.count * (this.options.m ?? HNSW_M) * 2 * 4 : 0);
  }

  has(slot: number): boolean {
    return slot < this.present.length && this.present[slot] === 1;
  }

  private ensureSlot(slot: number) {
    if (slot < this.present.length) return;
    let n = this.present.length;
    while (n <= slot) n *= 2;
    const present = new Uint8Array(n);
    present.set(this.present);
    this.present = present;
    const data = new Float32Array(n * this.dimensions);
    data.set(this.data);
    this.data = data;
  }

  /** Stores a unit vector for a slot (replacing any previous one). */
  set(slot: number, vector: Float32Array) {
    if (vector.length !== this.dimensions) throw new RangeError(`vector has ${vector.length} dimensions, index has ${this.dimensions}`);
    this.ensureSlot(slot);
    const unit = normalize(vector);
    this.data.set(unit, slot * this.dimensions);
    if (!this.present[slot]) this.count++;
    this.present[slot] = 1;
    if (this.graph) this.addToGraph(slot, unit);
    else if (this.count > (this.options.flatCutoff ?? FLAT_SEARCH_CUTOFF)) this.buildGraph();
  }

  remove(slot: number) {
    if (!this.has(slot)) return;
    this.present[slot] = 0;
    this.count--;
    if (this.graph) this.graph.markDelete(slot);
  }

  private buildGraph() {
    this.graph = new HierarchicalNSW("ip", this.dimensions);
    this.graphCapacity = Math.max(1024, this.present.length);
    this.graph.initIndex(this.graphCapacity, this.options.m ?? HNSW_M, this.options.efConstruction ?? HNSW_EF_CONSTRUCTION, 100, true);
    for (let slot = 0; slot < this.present.length; slot++) {
      if (this.present[slot]) this.addToGraph(slot, this.data.subarray(slot * this.dimensions, (slot + 1) * this.dimensions));
    }
  }

  private addToGraph(slot: number, unit: Float32Array) {
    const graph = this.graph!;
    if (slot >= this.graphCapacity || graph.getCurrentCount() >= this.graphCapacity) {
      this.graphCapacity = Math.max(this.graphCapacity * 2, slot + 1);
      graph.resizeIndex(this.graphCapacity);
    }
    graph.addPoint(Array.from(unit), slot, false);
  }

  /** Exact nearest neighbours among present slots `accept` allows. */
  exact(query: Float32Array, k: number, accept?: (slot: number) => boolean): VectorMatches {
    const q = normalize(query);
    const d = this.dimensions;
    const found: { slot: number; distance: number }[] = [];
    let worst = Number.POSITIVE_INFINITY;
    for (let slot = 0; slot < this.present.length; slot++) {
      if (!this.present[slot] || (accept && !accept(slot))) continue;
      let dot = 0;
      const base = slot * d;
      for (let i = 0; i < d; i++) dot += q[i]! * this.data[base + i]!;
      const distance = 1 - dot;
      if (found.length < k) {
        found.push({ slot, distance });
        if (found.length === k) {
          found.sort((a, b) => a.distance - b.distance || a.slot - b.slot);
          worst = found[k - 1]!.distance;
        }
      } else if (distance < worst) {
        found[k - 1] = { slot, distance };
        found.sort((a, b) => a.distance - b.distance || a.slot - b.slot);
        worst = found[k - 1]!.distance;
      }
    }
    found.sort((a, b) => a.distance - b.distance || a.slot - b.slot);
    return { slots: found.map((f) => f.slot), distances: found.map((f) => f.distance) };
  }

  /**
   * The k nearest slots within maxDistance. Uses the graph when there is one and the filter (if any)
   * leaves more than the flat cutoff; otherwise scans exactly.
   */
  search(query: Float32Array, k: number, maxDistance = 2, accept?: (slot: number) => boolean): VectorMatches {
    if (!this.count || k < 1) return { slots: [], distances: [] };
    let result: VectorMatches;
    const cutoff = this.options.flatCutoff ?? FLAT_SEARCH_CUTOFF;
    let useGraph = this.graph !== undefined;
    if (useGraph && accept) {
      let allowed = 0;
      for (let slot = 0; slot < this.present.length && allowed <= cutoff; slot++) if (this.present[slot] && accept(slot)) allowed++;
      useGraph = allowed > cutoff;
    }
    if (useGraph) {
      const graph = this.graph!;
      const want = Math.min(k, this.count);
      graph.setEf(Math.max(want, this.options.efSearch ?? HNSW_EF_SEARCH));
      const res = graph.searchKnn(Array.from(normalize(query)), want, accept ? (label) => this.has(label) && accept(label) : undefined);
      result = { slots: res.neighbors, distances: res.distances };
    } else {
      result = this.exact(query, k, accept);
    }
    let n = 0;
    while (n < result.slots.length && result.distances[n]! <= maxDistance) n++;
    return { slots: result.slots.slice(0, n), distances: result.distances.slice(0, n) };
  }

  /** Raw unit vector of a slot (a view; do not keep it across writes). */
  vectorOf(slot: number): Float32Array | undefined {
    return this.has(slot) ? this.data.subarray(slot * this.dimensions, (slot + 1) * this.dimensions) : undefined;
  }
}
