import type { Connection } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { coverRecordIds, nextRecordId, RECORD_ID_BLOCK } from "../../lib/ids";
import { databaseUrl } from "../harness/servers";

/**
 * Record ids from a block per process (lib/ids.ts, docs/adr/0050-write-path-speed.md, third pass), on the real
 * local server: one counter update per block, ids unique across processes (two connections stand for two) and
 * ascending in call order within one.
 */
describe("record ids from a block per process", () => {
  let first: Connection;
  let second: Connection;
  const counter = async (sequence: string) => (await first.collection<{ _id: string; seq: number }>("counters").findOne({ _id: sequence }))?.seq;

  beforeAll(async () => {
    first = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "record_ids"));
    await first.dropDatabase();
    second = first.useDb("record_ids", { useCache: false });
  });
  afterAll(() => closeAllDatabases());

  it("gives concurrent calls distinct ids in call order, reserving one block per RECORD_ID_BLOCK", async () => {
    const ids = await Promise.all(Array.from({ length: 2 * RECORD_ID_BLOCK + 3 }, () => nextRecordId(first, "widgets")));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    expect(await counter("widgets")).toBe(3 * RECORD_ID_BLOCK);
    // The rest of the third block serves the next calls without a counter update.
    expect(await nextRecordId(first, "widgets")).toBe(2 * RECORD_ID_BLOCK + 4);
    expect(await counter("widgets")).toBe(3 * RECORD_ID_BLOCK);
  });

  it("never gives two processes the same id, each ascending in its own order", async () => {
    const taken: number[][] = [[], []];
    for (let i = 0; i < 3 * RECORD_ID_BLOCK; i++) {
      taken[0]!.push(await nextRecordId(first, "gadgets"));
      taken[1]!.push(await nextRecordId(second, "gadgets"));
    }
    const all = taken.flat();
    expect(new Set(all).size).toBe(all.length);
    for (const own of taken) expect(own).toEqual([...own].sort((a, b) => a - b));
    expect(Math.max(...all)).toBe(await counter("gadgets"));
  });

  it("hands a covered sequence's ids out under a fresh cover, covering the rest of a block anew when its cover grows stale, skipping none", async () => {
    const before = await nextRecordId(first, "covered"); // taken before the sequence was covered: no cover
    const covers: { first: number; last: number; stale: boolean; retired: boolean }[] = [];
    coverRecordIds(first, "covered", async (from, to) => {
      const cover = { first: from, last: to, stale: false, retired: false };
      covers.push(cover);
      return { first: from, last: to, fresh: () => !cover.stale && !cover.retired, retire: () => void (cover.retired = true) };
    });
    const ids = [await nextRecordId(first, "covered"), await nextRecordId(first, "covered")];
    expect(covers).toEqual([{ first: before + 1, last: RECORD_ID_BLOCK, stale: false, retired: false }]);
    covers[0]!.stale = true;
    ids.push(await nextRecordId(first, "covered"));
    expect(covers.map((c) => [c.first, c.last, c.retired])).toEqual([
      [before + 1, RECORD_ID_BLOCK, true],
      [before + 3, RECORD_ID_BLOCK, false],
    ]);
    // The next block's first take retires the last cover of this one.
    while (ids.at(-1)! < RECORD_ID_BLOCK + 1) ids.push(await nextRecordId(first, "covered"));
    expect(ids).toEqual(ids.map((_, i) => before + 1 + i));
    expect(covers.map((c) => [c.first, c.last, c.retired])).toEqual([
      [before + 1, RECORD_ID_BLOCK, true],
      [before + 3, RECORD_ID_BLOCK, true],
      [RECORD_ID_BLOCK + 1, 2 * RECORD_ID_BLOCK, false],
    ]);
  });
});
