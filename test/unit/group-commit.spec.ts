import { groupCommit, keyedGroupCommit, perBatch } from "../../lib/group-commit";

describe("group commit", () => {
  it("flushes a lone call at once and the calls that came meanwhile together, each with its own result", async () => {
    const flushes: number[][] = [];
    const call = groupCommit(async (items: number[]) => {
      flushes.push(items);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((n) => n * 10);
    });
    const first = call(1);
    expect(flushes).toEqual([[1]]); // no waiting for company
    const rest = [call(2), call(3), call(4)];
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40]);
    expect(flushes).toEqual([[1], [2, 3, 4]]);
  });

  it("fails every call of a flush that throws, and goes on with the next", async () => {
    let fail = true;
    const call = groupCommit(async (items: string[]) => {
      await new Promise((r) => setTimeout(r, 1));
      if (fail) throw new Error("boom");
      return items;
    });
    const a = call("a");
    fail = true;
    const [b, c] = [call("b"), call("c")];
    await expect(a).rejects.toThrow("boom");
    fail = false;
    await expect(b).resolves.toBe("b");
    await expect(c).resolves.toBe("c");
  });

  it("caps a batch", async () => {
    const sizes: number[] = [];
    const call = groupCommit(async (items: number[]) => (sizes.push(items.length), items), 2);
    await Promise.all([1, 2, 3, 4, 5].map(call));
    expect(sizes).toEqual([1, 2, 2]);
  });

  it("never mixes keys", async () => {
    const flushes: [string, number[]][] = [];
    const call = keyedGroupCommit(async (key: string, items: number[]) => (flushes.push([key, items]), items));
    await Promise.all([call("a", 1), call("b", 2), call("a", 3), call("b", 4)]);
    expect(flushes).toEqual([
      ["a", [1]],
      ["b", [2]],
      ["a", [3]],
      ["b", [4]],
    ]);
  });
});

describe("perBatch", () => {
  it("cuts a flush's results back into one list per batch, empty batches included", () => {
    expect(perBatch([["a", "b"], [], ["c"]], [1, 2, 3])).toEqual([[1, 2], [], [3]]);
  });
});
