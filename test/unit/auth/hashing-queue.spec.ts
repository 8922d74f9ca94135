import { HashingQueue } from "../../../lib/auth/hashing-queue";

/** A hash that finishes when the test says so. */
function pending() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { done, finish };
}

describe("HashingQueue (issue 25, item 3)", () => {
  it("runs at most `concurrency` hashes, queues a few, refuses the rest with 429 at once", async () => {
    const queue = new HashingQueue({ concurrency: 1, maxWaiting: 1, maxPerClient: 10 });
    const first = pending();
    const started: number[] = [];
    const a = queue.run("1.1.1.1", async () => (started.push(1), first.done));
    const b = queue.run("2.2.2.2", async () => (started.push(2), "b"));
    await expect(queue.run("3.3.3.3", async () => "c")).rejects.toMatchObject({ code: 429, data: { retry_after: 1 } });
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([1]);
    first.finish();
    await a;
    expect(await b).toBe("b");
    expect(started).toEqual([1, 2]);
    expect(await queue.run("3.3.3.3", async () => "c")).toBe("c");
  });

  it("holds one address to its share of places, leaving room for others", async () => {
    const queue = new HashingQueue({ concurrency: 1, maxWaiting: 10, maxPerClient: 2 });
    const hash = pending();
    const mine = [queue.run("1.1.1.1", () => hash.done), queue.run("1.1.1.1", () => hash.done)];
    await expect(queue.run("1.1.1.1", () => hash.done)).rejects.toMatchObject({ code: 429 });
    const other = queue.run(undefined, async () => "other");
    hash.finish();
    await Promise.all(mine);
    expect(await other).toBe("other");
    // A failed hash frees its places too.
    await expect(queue.run("1.1.1.1", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await Promise.all([queue.run("1.1.1.1", async () => 1), queue.run("1.1.1.1", async () => 2)]);
  });
});
