import { reaches, MAX_VISITED } from "../../../services/tasks/graph";
import { selfReferenceProblem, statusFields, unmetDependencies } from "../../../services/tasks/rules";
import { pickDefined } from "../../../services/tasks/params";

describe("task status rules", () => {
  const now = new Date("2026-11-23T10:00:00Z");
  const earlier = new Date("2026-11-20T10:00:00Z");

  it("sets completed_at when a task becomes completed, keeps it while it stays completed, clears it when it leaves", () => {
    expect(statusFields(null, "pending", now)).toEqual({ status: "pending", completed_at: null });
    expect(statusFields(null, "completed", now)).toEqual({ status: "completed", completed_at: now });
    expect(statusFields({ status: "in_progress", completed_at: null }, "completed", now)).toEqual({ status: "completed", completed_at: now });
    expect(statusFields({ status: "completed", completed_at: earlier }, "completed", now)).toEqual({ status: "completed", completed_at: earlier });
    expect(statusFields({ status: "completed", completed_at: earlier }, "pending", now)).toEqual({ status: "pending", completed_at: null });
    expect(statusFields({ status: "completed", completed_at: earlier }, "failed", now)).toEqual({ status: "failed", completed_at: null });
  });

  it("starting or completing needs every dependency completed; other moves are free", () => {
    const deps = [
      { id: 1, status: "completed" as const },
      { id: 2, status: "in_progress" as const },
      { id: 3, status: "cancelled" as const },
    ];
    expect(unmetDependencies("pending", "in_progress", deps)).toEqual([2, 3]);
    expect(unmetDependencies("in_progress", "completed", deps)).toEqual([2, 3]);
    expect(unmetDependencies("pending", "blocked", deps)).toEqual([]);
    expect(unmetDependencies("pending", "cancelled", deps)).toEqual([]);
    expect(unmetDependencies("in_progress", "failed", deps)).toEqual([]);
    // Staying where it is is never refused, even if a dependency was added after the task started.
    expect(unmetDependencies("in_progress", "in_progress", deps)).toEqual([]);
    expect(unmetDependencies("pending", "completed", [{ id: 1, status: "completed" }])).toEqual([]);
    expect(unmetDependencies("pending", "completed", [])).toEqual([]);
  });

  it("a task cannot reference itself", () => {
    expect(selfReferenceProblem(5, 5, "parent_id")).toEqual({ field: "parent_id", message: expect.stringContaining("itself"), type: "reference.self" });
    expect(selfReferenceProblem(5, 5, "dependency_id", "path")).toMatchObject({ field: "dependency_id", location: "path" });
    expect(selfReferenceProblem(5, 6, "parent_id")).toBeNull();
    expect(selfReferenceProblem(5, null, "parent_id")).toBeNull();
  });

  it("keeps only the named keys that are set", () => {
    expect(pickDefined({ title: "t", description: undefined, account_id: 9, status: null }, ["title", "description", "status"])).toEqual({
      title: "t",
      status: null,
    });
  });
});

describe("task graph reachability (cycle checks)", () => {
  /** Edges as a plain map, read one frontier at a time like the service's query. */
  const graph = (edges: Record<number, number[]>) => {
    const calls: number[][] = [];
    const neighbours = async (ids: number[]) => {
      calls.push(ids);
      return ids.flatMap((id) => edges[id] ?? []);
    };
    return { neighbours, calls };
  };

  it("finds a target reachable through any number of steps", async () => {
    const { neighbours } = graph({ 1: [2], 2: [3, 4], 4: [5] });
    expect(await reaches(1, 5, neighbours)).toBe(true);
    expect(await reaches(1, 3, neighbours)).toBe(true);
    expect(await reaches(5, 1, neighbours)).toBe(false);
    expect(await reaches(3, 4, neighbours)).toBe(false);
  });

  it("linking A to B closes a cycle exactly when A is reachable from B", async () => {
    // B depends on C, C depends on A: adding "A depends on B" would close A -> B -> C -> A.
    const { neighbours } = graph({ 2: [3], 3: [1] });
    expect(await reaches(2, 1, neighbours)).toBe(true);
    expect(await reaches(1, 2, neighbours)).toBe(false);
  });

  it("visits each task once, so links that already loop cannot hang the search", async () => {
    const { neighbours, calls } = graph({ 1: [2], 2: [3], 3: [1, 2], 4: [] });
    expect(await reaches(1, 4, neighbours)).toBe(false);
    expect(calls).toEqual([[1], [2], [3]]);
  });

  it("reads one query per level, with shared neighbours deduplicated", async () => {
    const { neighbours, calls } = graph({ 1: [2, 3], 2: [4], 3: [4], 4: [] });
    expect(await reaches(1, 9, neighbours)).toBe(false);
    expect(calls).toEqual([[1], [2, 3], [4]]);
  });

  it("treats a chain longer than the visit limit as reaching the target, refusing rather than looping", async () => {
    const neighbours = async (ids: number[]) => ids.map((id) => id + 1);
    expect(await reaches(1, -1, neighbours)).toBe(true);
    const short = async (ids: number[]) => ids.filter((id) => id < MAX_VISITED - 10).map((id) => id + 1);
    expect(await reaches(1, -1, short)).toBe(false);
  });
});
