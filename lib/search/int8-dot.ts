/**
 * Dot products of a query with int8 vectors in WebAssembly SIMD, for the vector index's scans once the graph
 * holds the full-precision vectors. JavaScript multiplies about one dimension per nanosecond (0.5 ms for 1,000
 * 512-d vectors, whatever the typed arrays or unrolling); `i32x4.dot_i16x8_s` does eight per instruction, so
 * copying the vectors into WebAssembly memory costs more than the products (0.05 + 0.03 ms for those 1,000).
 *
 * The query is quantized to int16 so the products are exact integers (the same whatever the order), with a
 * scale that keeps every sum within int32; its rounding error is two orders of magnitude below the int8
 * vectors'.
 */

/** The WebAssembly globals used here (the project's lib, ES2023 without the DOM, declares none). */
declare const WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object) => { exports: unknown } };
interface Exports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  dots(q: number, v: number, n: number, d: number, out: number): void;
}

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    const b = n & 0x7f;
    n >>>= 7;
    out.push(n ? b | 0x80 : b);
  } while (n);
  return out;
};
const simd = (op: number) => [0xfd, ...leb(op)];
const sized = (bytes: number[]) => [...leb(bytes.length), ...bytes];
const name = (s: string) => sized([...Buffer.from(s)]);
const lane = (i: number) => [0x20, 6, ...simd(27), i]; // local.get $acc; i32x4.extract_lane i

/**
 * dots(q, v, n, d, out): for each of n vectors of d int8 (d a multiple of 8) from v, the int32 dot product with
 * the d int16 at q, stored at out. Params 0-4 as named; local 5 is i, local 6 the v128 accumulator.
 */
const DOTS = [
  2, 1, 0x7f, 1, 0x7b, // locals: two groups, i32 $i and v128 $acc
  0x02, 0x40, 0x03, 0x40, // block, loop (over vectors)
  0x20, 2, 0x45, 0x0d, 1, // if n == 0 leave
  ...simd(12), ...new Array<number>(16).fill(0), 0x21, 6, // acc = 0
  0x41, 0, 0x21, 5, // i = 0
  0x03, 0x40, // loop (over dimensions, 8 at a time)
  0x20, 6,
  0x20, 0, 0x20, 5, 0x41, 1, 0x74, 0x6a, ...simd(0), 0, 0, // v128.load q + 2i
  0x20, 1, 0x20, 5, 0x6a, ...simd(1), 0, 0, // v128.load8x8_s v + i
  ...simd(186), ...simd(174), 0x21, 6, // acc += i32x4.dot_i16x8_s
  0x20, 5, 0x41, 8, 0x6a, 0x22, 5, 0x20, 3, 0x49, 0x0d, 0, // i += 8; again while i < d
  0x0b,
  0x20, 4, ...lane(0), ...lane(1), 0x6a, ...lane(2), ...lane(3), 0x6a, 0x6a, 0x36, 2, 0, // *out = sum of lanes
  0x20, 4, 0x41, 4, 0x6a, 0x21, 4, // out += 4
  0x20, 1, 0x20, 3, 0x6a, 0x21, 1, // v += d
  0x20, 2, 0x41, 1, 0x6b, 0x21, 2, // n -= 1
  0x0c, 0,
  0x0b, 0x0b, 0x0b,
];

const MODULE = new WebAssembly.Module(
  Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    1, ...sized([1, 0x60, 5, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0]), // type (i32 x 5) -> ()
    3, ...sized([1, 0]), // one function of that type
    5, ...sized([1, 0, 1]), // memory, 1 page at first
    7, ...sized([2, ...name("memory"), 2, 0, ...name("dots"), 0, 0]),
    10, ...sized([1, ...sized(DOTS)]),
  ]),
);

/** Vectors per call: a full scan of a large partition goes in batches of this many. */
export const DOT_BATCH = 1024;
const WASM_PAGE = 65536;

/**
 * Scratch memory and the kernel for one dimension count. Its views are valid until the next `kernelFor` of
 * another, larger count (the memory may grow); callers fill and run it synchronously.
 */
export interface Int8DotKernel {
  /** Dimensions rounded up to a multiple of 8: the stride of `vectors`. */
  stride: number;
  /** DOT_BATCH vectors, `stride` apart; bytes past the dimensions are ignored (the query is 0 there). */
  vectors: Int8Array;
  /** Sets the unit query; returns the scale of its int16 copy. */
  query(unit: Float32Array): number;
  /** Dot products of the query with the first n vectors (query units x int8 units). */
  run(n: number): Int32Array;
}

let instance: Exports | undefined;
const kernels = new Map<number, Int8DotKernel>();

export function kernelFor(dimensions: number): Int8DotKernel {
  const cached = kernels.get(dimensions);
  if (cached && cached.vectors.buffer === instance!.memory.buffer) return cached;
  instance ??= new WebAssembly.Instance(MODULE).exports as Exports;
  const stride = Math.ceil(dimensions / 8) * 8;
  const bytes = stride * 2 + stride * DOT_BATCH + 4 * DOT_BATCH;
  const memory = instance.memory;
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / WASM_PAGE));
  const buffer = memory.buffer;
  const q = new Int16Array(buffer, 0, stride);
  const vectorsAt = stride * 2;
  const outAt = vectorsAt + stride * DOT_BATCH;
  const out = new Int32Array(buffer, outAt, DOT_BATCH);
  // Every sum of |query| x 127 over the dimensions stays below 2^31.
  const qmax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));
  const dots = instance.dots;
  const kernel: Int8DotKernel = {
    stride,
    vectors: new Int8Array(buffer, vectorsAt, stride * DOT_BATCH),
    query(unit) {
      let max = 0;
      for (let i = 0; i < dimensions; i++) max = Math.max(max, Math.abs(unit[i]!));
      const scale = max / qmax || 1;
      q.fill(0);
      for (let i = 0; i < dimensions; i++) q[i] = Math.round(unit[i]! / scale);
      return scale;
    },
    run(n) {
      dots(0, vectorsAt, n, stride, outAt);
      return out;
    },
  };
  kernels.set(dimensions, kernel);
  return kernel;
}
