import { filterScope } from "../../../lib/search/embedded/filter-scope";
import { Partition } from "../../../lib/search/embedded/partition";
import { compileFilter, filterProblems, type SearchFilter } from "../../../lib/search/filters";
import type { IndexedChunk } from "../../../lib/search/port";

/**
 * The embedded engine's filter scope (metadata index, byte masks) selects exactly what lib/search/filters.ts
 * `matches` selects, for random filters over random metadata, and stays exact as documents change after the
 * names they hold have been indexed.
 */
let seed = 3;
const rnd = (n: number) => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
};
const pick = <T>(xs: readonly T[]) => xs[rnd(xs.length)]!;
const DAY = 86_400_000;
const BASE = Date.parse("2026-01-01T00:00:00Z");
const LANGS = ["en", "de", "12", "2026-01-05"] as const;
const day = () => BASE + rnd(10) * DAY;

function randomMetadata(): Record<string, unknown> | null {
  if (!rnd(10)) return null;
  const m: Record<string, unknown> = {};
  if (rnd(4)) m.lang = rnd(5) ? pick(LANGS) : pick([12, true, { code: "en" }, null]);
  if (rnd(3)) m.n = pick([rnd(10), rnd(10) + 0.5, String(rnd(10))]);
  if (rnd(3)) m.draft = pick([true, false, "false"]);
  if (rnd(3)) m.tags = pick([[pick(["x", "y"]), pick(["x", "y", 3])], ["x", "x"], [], [null], [["x"]]]);
  if (rnd(3)) m.when = rnd(2) ? new Date(day()).toUTCString() : new Date(day()).toISOString().slice(0, rnd(2) ? 10 : 24);
  return m;
}

const leaf = (documents: string[]): SearchFilter =>
  pick<() => SearchFilter>([
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.lang", value: pick([...LANGS, 12, true]) }),
    () => ({ type: pick(["in", "nin"] as const), key: "metadata.lang", value: [pick(LANGS), pick([...LANGS, 12])] }),
    () => ({ type: pick(["eq", "ne", "in", "nin"] as const), key: "metadata.tags", value: pick([["x"], ["y", 3]]) }),
    () => ({ type: pick(["eq", "ne"] as const), key: "metadata.draft", value: pick([true, false, "false"]) }),
    () => ({ type: pick(["eq", "ne", "gt", "gte", "lt", "lte"] as const), key: "metadata.n", value: rnd(10) }),
    () => ({ type: pick(["gt", "gte", "lt", "lte"] as const), key: pick(["metadata.when", "metadata.lang"]), value: new Date(day()).toISOString() }),
    () => ({ type: pick(["eq", "ne", "gt", "lte"] as const), key: "source_id", value: 1 + rnd(4) }),
    () => ({ type: pick(["in", "nin"] as const), key: "source_id", value: [1 + rnd(4), 1 + rnd(4)] }),
    () => ({ type: pick(["eq", "ne"] as const), key: "document_id", value: pick(documents) }),
    () => ({ type: pick(["in", "nin"] as const), key: "document_id", value: [pick(documents), "nope"] }),
    () => ({ type: pick(["eq", "ne", "gt", "gte", "lt", "lte"] as const), key: "indexed_at", value: rnd(2) ? day() : new Date(day()).toISOString() }),
    () => ({ type: pick(["in", "nin"] as const), key: "indexed_at", value: [day(), day()] }),
  ])();
const randomFilter = (documents: string[], depth: number): SearchFilter => {
  if (depth === 0 || rnd(3) === 0) {
    const f = leaf(documents);
    // Ranges take one value; list leaves above give an array for eq/ne too.
    return "value" in f && Array.isArray(f.value) && !["in", "nin"].includes(f.type) ? { ...f, value: f.value[0]! } : f;
  }
  return { type: pick(["and", "or"] as const), filters: Array.from({ length: 1 + rnd(3), }, () => randomFilter(documents, depth - 1)) };
};

describe("embedded engine: filter scope", () => {
  it("selects what matches selects, before and after documents change", () => {
    const p = new Partition(4, {});
    const metadataOf = new Map<string, Record<string, unknown> | null>();
    const chunks = new Map<string, IndexedChunk>();
    let next = 0;
    const upsert = (documentId: string, sourceId: number, metadata: Record<string, unknown> | null) => {
      const c: IndexedChunk = {
        id: `c${next++}`, accountId: 1, sourceId, documentId, position: 0, title: "t", url: "u", content: "text",
        vector: rnd(3) ? Float32Array.from({ length: 4 }, () => Math.random() - 0.5) : null, indexedAt: day(), metadata,
      };
      chunks.set(c.id, c);
      metadataOf.set(documentId, metadata);
      p.upsert(c);
    };
    for (let d = 0; d < 60; d++) {
      const metadata = randomMetadata();
      const sourceId = 1 + rnd(4);
      for (let i = 0, n = 1 + rnd(4); i < n; i++) upsert(`d${d}`, sourceId, metadata);
    }

    const check = () => {
      const documents = [...metadataOf.keys()];
      let partial = 0;
      for (let t = 0; t < 300; t++) {
        const filter = randomFilter(documents, 3);
        expect(filterProblems(filter)).toEqual([]);
        const sources = rnd(4) ? undefined : new Set([1 + rnd(4), 1 + rnd(4)]);
        const scope = filterScope(p, sources, filter);
        const test = compileFilter(filter);
        const expected: string[] = [];
        const actual: string[] = [];
        for (const c of chunks.values()) {
          if ((!sources || sources.has(c.sourceId)) && test({ ...c, metadata: metadataOf.get(c.documentId) })) expected.push(c.id);
          if (scope.accept(p.slotOf.get(c.id)!)) actual.push(c.id);
        }
        expect({ filter, sources, actual }).toEqual({ filter, sources, actual: expected });
        expect({ filter, vectors: scope.vectors() }).toEqual({ filter, vectors: expected.some((id) => chunks.get(id)!.vector) });
        expect(scope.slots(Number.POSITIVE_INFINITY)!.map((slot) => p.chunks[slot]!.id).sort()).toEqual([...expected].sort());
        const limit = rnd(6);
        expect(scope.slots(limit)?.length).toBe(expected.length > limit ? undefined : expected.length);
        if (expected.length && expected.length < chunks.size) partial++;
      }
      expect(partial).toBeGreaterThan(150);
    };
    check();

    // Changes after every name has been indexed: new metadata for whole documents, a chunk's upsert with new
    // metadata, chunks and documents removed, new documents.
    const ids = () => [...chunks.keys()];
    for (let i = 0; i < 15; i++) {
      const documentId = pick([...metadataOf.keys()]);
      const metadata = randomMetadata();
      p.setMetadata(p.documents.get(documentId)!, metadata);
      metadataOf.set(documentId, metadata);
    }
    for (let i = 0; i < 10; i++) {
      const old = chunks.get(pick(ids()))!;
      chunks.delete(old.id);
      upsert(old.documentId, old.sourceId, randomMetadata());
      p.remove(old.id);
    }
    for (let i = 0; i < 40; i++) {
      const id = pick(ids());
      const documentId = chunks.get(id)!.documentId;
      chunks.delete(id);
      p.remove(id);
      if (![...chunks.values()].some((c) => c.documentId === documentId)) metadataOf.delete(documentId);
    }
    for (let d = 60; d < 70; d++) upsert(`d${d}`, 1 + rnd(4), randomMetadata());
    check();
  });
});
