import type { Connection } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { crossAccount, tenantFilter } from "../../lib/tenancy-guard";
import { agentModel } from "../../services/agents/model";
import { databaseUrl } from "../harness/servers";

/**
 * Tenancy by construction (lib/tenancy-guard.ts): on a real database, a query on tenant data without
 * account_id is refused before it reaches the server, and the one escape hatch lets a named one through.
 */
describe("the tenancy guard on every model", () => {
  let db: Connection;
  const REFUSED = /without account_id/;

  beforeAll(async () => {
    db = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "tenancy-guard"));
    await db.dropDatabase();
    const agents = agentModel(db);
    await agents.init();
    const base = { description: null, instructions: "", model: "m" };
    await agents.create({ ...base, _id: 1, account_id: 10, name: "A", identifier: "a" } as never);
    await agents.create({ ...base, _id: 2, account_id: 20, name: "B", identifier: "b" } as never);
  });
  afterAll(() => closeAllDatabases());

  it("refuses reads, counts, updates, deletes and aggregations without account_id", async () => {
    const agents = agentModel(db);
    await expect(agents.find({}).lean()).rejects.toThrow(REFUSED);
    await expect(agents.findById(1).lean()).rejects.toThrow(REFUSED);
    await expect(agents.findOne({ identifier: "a" })).rejects.toThrow(REFUSED);
    await expect(agents.countDocuments({})).rejects.toThrow(REFUSED);
    await expect(agents.updateOne({ _id: 1 }, { $set: { name: "X" } })).rejects.toThrow(REFUSED);
    await expect(agents.findOneAndUpdate({ _id: 1 }, { $set: { name: "X" } })).rejects.toThrow(REFUSED);
    await expect(agents.deleteMany({})).rejects.toThrow(REFUSED);
    await expect(agents.aggregate([{ $match: { identifier: "a" } }])).rejects.toThrow(REFUSED);
    await expect(agents.bulkWrite([{ updateOne: { filter: { _id: 1, account_id: 10 }, update: { $set: { name: "X" } } } }, { updateOne: { filter: { _id: 2 }, update: { $set: { name: "X" } } } }])).rejects.toThrow(REFUSED);
    // Nothing was written.
    expect(await agents.countDocuments({ account_id: 10, name: "A" })).toBe(1);
    expect(await agents.countDocuments({ account_id: 20 })).toBe(1);
  });

  it("lets scoped queries through, and returns only that account's records", async () => {
    const agents = agentModel(db);
    expect((await agents.find({ account_id: 10 }).lean()).map((a) => a._id)).toEqual([1]);
    expect((await agents.find({ $and: [{ account_id: 20 }, { identifier: "b" }] }).lean()).map((a) => a._id)).toEqual([2]);
    expect(await agents.aggregate([{ $match: { account_id: 20 } }, { $count: "n" }])).toEqual([{ n: 1 }]);
    const renamed = await agents.bulkWrite([{ updateOne: { filter: { _id: 2, account_id: 20 }, update: { $set: { name: "B" } } } }]);
    expect(renamed.matchedCount).toBe(1);
  });

  it("lets a query through the one escape hatch, crossAccount(reason, query), and only with a reason", async () => {
    const agents = agentModel(db);
    const all = await crossAccount("test: every account", agents.find({}).sort({ _id: 1 })).lean();
    expect(all.map((a) => a._id)).toEqual([1, 2]);
    expect(await crossAccount("test: every account", agents.aggregate([{ $count: "n" }]))).toEqual([{ n: 2 }]);
    expect(() => crossAccount(" ", agents.find({}))).toThrow(/reason/);
    // The hatch is per query: the next one is guarded again.
    await expect(agents.find({}).lean()).rejects.toThrow(REFUSED);
  });

  it("checks raw-driver filters on tenant data the same way", () => {
    expect(() => tenantFilter("agents", { _id: 1 })).toThrow(REFUSED);
    expect(tenantFilter("agents", { _id: 1, account_id: 10 })).toEqual({ _id: 1, account_id: 10 });
  });
});
