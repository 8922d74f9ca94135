/**
 * The caller's side of writes through owners (lib/owner-writes.ts): batches in order, commits in write order,
 * undo newest first past failures, and which errors mean "plan again".
 */
import { Errors } from "moleculer";
import { ERRORS } from "../../lib/errors";
import { isReplanError, OwnerWrites } from "../../lib/owner-writes";

const change = (id: string) => ({ id, draft: { type: "agent.created", accountId: 1, record: ["agents", 1] as [string, number] } });

function fakeOwners(failing: string[] = []) {
  const calls: [string, object][] = [];
  const call = jest.fn(async (action: string, params: object) => {
    calls.push([action, params]);
    if (failing.includes(action)) throw new Error(`${action} failed`);
    const owner = action.split(".")[0]!;
    if (action.endsWith(".putBatch")) return { records: [{ _id: 1, owner }], changes: owner === "tools" ? [] : [change(`${owner}-event`)], undo: [{ id: 1, accountId: 1, before: null }] };
    return undefined;
  });
  return { call: call as never, calls };
}

describe("OwnerWrites", () => {
  it("answers an empty batch without a call and returns each batch's records", async () => {
    const { call, calls } = fakeOwners();
    const writes = new OwnerWrites(call);
    expect(await writes.put("traits", [])).toEqual([]);
    expect(await writes.put("agents", [{ id: null, identifier: "a", def: { name: "a" } }])).toEqual([{ _id: 1, owner: "agents" }]);
    expect(calls).toEqual([["agents.putBatch", { items: [{ id: null, identifier: "a", def: { name: "a" } }] }]]);
    // A batch is never abandoned by a request timeout while the owner goes on writing.
    expect((call as unknown as jest.Mock).mock.calls[0][2]).toEqual({ timeout: 0 });
  });

  it("commits the batches' events in write order, skipping batches that changed nothing", async () => {
    const { call, calls } = fakeOwners();
    const writes = new OwnerWrites(call);
    for (const owner of ["traits", "tools", "agents"]) await writes.put(owner, [{ id: null, identifier: "x", def: {} }]);
    calls.length = 0;
    await writes.commit();
    expect(calls.map(([action]) => action)).toEqual(["traits.commitBatch", "agents.commitBatch"]);
    expect(calls[0]![1]).toEqual({ changes: [change("traits-event")] });
  });

  it("undoes every batch newest first, going on past an undo that fails and warning of it", async () => {
    const { call, calls } = fakeOwners(["tools.undoBatch"]);
    const warn = jest.fn();
    const writes = new OwnerWrites(call, warn);
    for (const owner of ["traits", "tools", "agents"]) await writes.put(owner, [{ id: null, identifier: "x", def: {} }]);
    calls.length = 0;
    await writes.rollback();
    expect(calls.map(([action]) => action)).toEqual(["agents.undoBatch", "tools.undoBatch", "traits.undoBatch"]);
    expect(calls[0]![1]).toEqual({ changes: [change("agents-event")], undo: [{ id: 1, accountId: 1, before: null }] });
    expect(warn).toHaveBeenCalledWith("Undoing a tools batch failed", expect.any(Error));
    // Nothing is left to undo or commit.
    calls.length = 0;
    await writes.rollback();
    await writes.commit();
    expect(calls).toEqual([]);
  });
});

describe("isReplanError", () => {
  it("is true for a duplicate key here and for an owner's replan conflict, as rebuilt after the transporter", () => {
    expect(isReplanError(Object.assign(new Error("E11000"), { code: 11000 }))).toBe(true);
    const conflict = ERRORS.conflict("plan again", { reason: "replan" });
    expect(isReplanError(conflict)).toBe(true);
    // What a remote node rebuilds: the same class by name, with code, type and data.
    expect(isReplanError(new Errors.MoleculerClientError(conflict.message, conflict.code, conflict.type, conflict.data))).toBe(true);
  });

  it("is false for other errors, conflicts included", () => {
    expect(isReplanError(ERRORS.conflict("taken"))).toBe(false);
    expect(isReplanError(new Error("boom"))).toBe(false);
    expect(isReplanError(null)).toBe(false);
  });
});
