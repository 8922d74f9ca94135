import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EmbeddedEngine, type EmbeddedEngineOptions } from "../../../lib/search/embedded/engine";
import type { IndexedChunk, IndexQuery, IndexResult, SearchMode } from "../../../lib/search/port";

const D = 32;
const ACCOUNT = 7;
const STAMP = { epoch: "epoch-1", generation: 5 };
const WORDS = "refund invoice parcel delivery password reset tunnel photosynthesis chlorophyll garden billing weeks days hour café naïve".split(" ");

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A small corpus: a few topics (vectors near topic centroids, words from topic slices), several sources. */
function corpus(n: number, seed = 1, account = ACCOUNT): IndexedChunk[] {
  const r = rng(seed);
  const centroids = Array.from({ length: 4 }, () => Float32Array.from({ length: D }, () => r() * 2 - 1));
  return Array.from({ length: n }, (_, i) => {
    const topic = i % 4;
    const words = Array.from({ length: 12 }, () => WORDS[(topic * 4 + Math.floor(r() * 6)) % WORDS.length]);
    // One chunk has a lone surrogate (a chunk cut inside an emoji), one has non-Latin text.
    const extra = i === 3 ? " \ud83d" : i === 4 ? " 東京 Ünïcödé" : "";
    return {
      id: `${account}-c${i}`,
      accountId: account,
      sourceId: 1 + (Math.floor(i / 2) % 3),
      documentId: `${account}-d${Math.floor(i / 2)}`,
      position: i % 2,
      title: `Doc ${Math.floor(i / 2)} ${WORDS[topic]}`,
      url: `https://example.test/${Math.floor(i / 2)}`,
      content: `${words.join(" ")}${extra}`,
      vector: i % 9 === 8 ? null : Float32Array.from(centroids[topic]!, (c) => c + (r() - 0.5)),
      indexedAt: 0,
    };
  });
}

function queries(seed = 2): IndexQuery[] {
  const r = rng(seed);
  const out: IndexQuery[] = [];
  for (const mode of ["keyword", "semantic", "hybrid"] as SearchMode[]) {
    for (let i = 0; i < 4; i++) {
      const text = `${WORDS[Math.floor(r() * WORDS.length)]} ${WORDS[Math.floor(r() * WORDS.length)]}`;
      const vector = Float32Array.from({ length: D }, () => r() * 2 - 1);
      const base = { accountId: ACCOUNT, text, mode, vector, depth: 100, alpha: 0.3, maxDistance: 2 };
      out.push(base, { ...base, sourceIds: [2] }, { ...base, sourceIds: [1, 3], depth: 10 });
    }
  }
  return out;
}

/** Every answer as plain data, chunk text included (hits read it lazily). */
async function answers(engine: EmbeddedEngine, qs = queries()): Promise<IndexResult[]> {
  const results = await Promise.all(qs.map((q) => engine.search(q)));
  return results.map((r) => ({ ...r, hits: r.hits.map((h) => ({ ...h, content: h.content })) }));
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "search-snapshot-"));
}

describe.each([
  ["flat vectors, text read from the snapshot", { dimensions: D, textOnDiskFrom: 0 } as EmbeddedEngineOptions],
  ["HNSW graph, text read from the snapshot", { dimensions: D, flatCutoff: 10, textOnDiskFrom: 0 } as EmbeddedEngineOptions],
  ["HNSW graph, text kept in memory (small partition)", { dimensions: D, flatCutoff: 10 } as EmbeddedEngineOptions],
])("EmbeddedEngine snapshots (%s)", (_name, options) => {
  let dir: string;
  const engines: EmbeddedEngine[] = [];
  const engine = () => {
    const e = new EmbeddedEngine(options);
    engines.push(e);
    return e;
  };

  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("writes a snapshot and loads it back into an engine that answers identically", async () => {
    const original = engine();
    original.load(corpus(60));
    const before = await answers(original);
    const written = await original.writeSnapshot(ACCOUNT, dir, STAMP);
    expect(written).toMatchObject({ chunks: 60, graph: options.flatCutoff !== undefined });
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);

    const restored = engine();
    const loaded = await restored.loadSnapshot(ACCOUNT, dir, STAMP);
    expect(loaded).toMatchObject({ ok: true, chunks: 60 });
    expect(await answers(restored)).toEqual(before);
    // The original now reads its chunk text from the snapshot file and still answers the same.
    expect(await answers(original)).toEqual(before);
    expect(before.some((r) => r.hits.some((h) => h.content.endsWith("\ud83d")))).toBe(true);
    expect(await restored.stats(ACCOUNT)).toEqual(await original.stats(ACCOUNT));
    expect(await restored.countDocuments(ACCOUNT, 2)).toBe(await original.countDocuments(ACCOUNT, 2));
  });

  it("keeps answering like a never-snapshotted engine through writes, deletes and a second snapshot", async () => {
    const reference = engine();
    const snapshotted = engine();
    const chunks = corpus(80);
    reference.load(chunks);
    snapshotted.load(chunks);
    await snapshotted.writeSnapshot(ACCOUNT, dir, STAMP);
    const restored = engine();
    expect((await restored.loadSnapshot(ACCOUNT, dir, STAMP)).ok).toBe(true);

    const more = corpus(30, 9).map((c) => ({ ...c, id: `${c.id}-new`, documentId: `${c.documentId}-new` }));
    const changed = { ...chunks[5]!, content: "an updated refund policy for parcels", vector: null };
    for (const e of [reference, restored]) {
      await e.upsertChunks([...more, changed]);
      await e.deleteChunks(ACCOUNT, [chunks[0]!.id, chunks[1]!.id, more[2]!.id]);
      await e.setVectors(ACCOUNT, [{ id: changed.id, vector: chunks[6]!.vector! }]);
      await e.deleteSource(ACCOUNT, 3);
    }
    expect(await answers(restored)).toEqual(await answers(reference));

    // Second generation: text comes partly from the first snapshot file, partly from memory.
    await restored.writeSnapshot(ACCOUNT, dir, { ...STAMP, generation: 6 });
    const again = engine();
    expect((await again.loadSnapshot(ACCOUNT, dir, { ...STAMP, generation: 6 })).ok).toBe(true);
    expect(await answers(again)).toEqual(await answers(reference));
    expect(await answers(restored)).toEqual(await answers(reference));
    expect(fs.readdirSync(dir).filter((f) => f.startsWith("graph-")).length).toBeLessThanOrEqual(1);
  });

  it("refuses a snapshot stamped with another generation or epoch (stale) and leaves no partition", async () => {
    const original = engine();
    original.load(corpus(20));
    await original.writeSnapshot(ACCOUNT, dir, STAMP);
    const restored = engine();
    const newer = await restored.loadSnapshot(ACCOUNT, dir, { ...STAMP, generation: 6 });
    expect(newer).toEqual({ ok: false, reason: expect.stringMatching(/^stale: generation 5/) });
    const otherDb = await restored.loadSnapshot(ACCOUNT, dir, { ...STAMP, epoch: "epoch-2" });
    expect(otherDb).toEqual({ ok: false, reason: expect.stringMatching(/^stale/) });
    expect(await restored.countDocuments(ACCOUNT)).toBe(0);
    expect(await restored.loadSnapshot(ACCOUNT, path.join(dir, "nothing"), STAMP)).toEqual({ ok: false, reason: expect.stringMatching(/^missing/) });
  });

  it.each([
    ["a flipped byte in the chunk text", (file: string) => flip(file, 10)],
    ["a flipped byte in the middle (postings, tables)", (file: string) => flip(file, Math.floor(fs.statSync(file).size * 0.6))],
    ["a truncated file", (file: string) => fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2))],
    ["a flipped byte in the header", (file: string) => flip(file, fs.statSync(file).size - 40)],
    ["garbage", (file: string) => fs.writeFileSync(file, "not a snapshot")],
  ])("ignores a corrupt snapshot: %s", async (_what, corrupt) => {
    const original = engine();
    original.load(corpus(40));
    await original.writeSnapshot(ACCOUNT, dir, STAMP);
    corrupt(path.join(dir, "partition.bin"));
    const restored = engine();
    const loaded = await restored.loadSnapshot(ACCOUNT, dir, STAMP);
    expect(loaded.ok).toBe(false);
    expect(await restored.countDocuments(ACCOUNT)).toBe(0);
  });

  if (options.flatCutoff !== undefined) {
    it("ignores a snapshot whose graph file is damaged or missing", async () => {
      const original = engine();
      original.load(corpus(40));
      await original.writeSnapshot(ACCOUNT, dir, STAMP);
      const graph = path.join(dir, fs.readdirSync(dir).find((f) => f.startsWith("graph-"))!);
      flip(graph, Math.floor(fs.statSync(graph).size / 2));
      expect(await engine().loadSnapshot(ACCOUNT, dir, STAMP)).toEqual({ ok: false, reason: expect.stringMatching(/^corrupt: graph/) });
      fs.rmSync(graph);
      expect((await engine().loadSnapshot(ACCOUNT, dir, STAMP)).ok).toBe(false);
    });
  }

  it("writes an empty snapshot for an account without chunks", async () => {
    await engine().writeSnapshot(ACCOUNT, dir, STAMP);
    const restored = engine();
    expect(await restored.loadSnapshot(ACCOUNT, dir, STAMP)).toMatchObject({ ok: true, chunks: 0 });
    expect((await restored.search(queries()[0]!)).hits).toEqual([]);
  });

  it("holds writes to the partition while its snapshot is written, but not searches", async () => {
    const original = engine();
    const chunks = corpus(30);
    original.load(chunks.slice(0, 20));
    const writing = original.writeSnapshot(ACCOUNT, dir, STAMP);
    let upserted = false;
    const upsert = original.upsertChunks(chunks.slice(20)).then(() => (upserted = true));
    expect((await original.search(queries()[0]!)).modeUsed).toBe("keyword");
    await writing;
    await upsert;
    expect(upserted).toBe(true);
    expect(await original.countDocuments(ACCOUNT)).toBe(15);
    const restored = engine();
    await restored.loadSnapshot(ACCOUNT, dir, STAMP);
    expect(await restored.countDocuments(ACCOUNT)).toBe(10);
  });
});

function flip(file: string, at: number) {
  const fd = fs.openSync(file, "r+");
  const b = Buffer.alloc(1);
  fs.readSync(fd, b, 0, 1, at);
  b[0] = b[0]! ^ 0xff;
  fs.writeSync(fd, b, 0, 1, at);
  fs.closeSync(fd);
}
