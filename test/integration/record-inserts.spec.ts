import type { Connection } from "mongoose";
import { closeAllDatabases, connectDatabase, createRecord } from "../../lib/db";
import { isDuplicateKeyError } from "../../lib/errors";
import { toolModel } from "../../services/tools/model";
import { databaseUrl } from "../harness/servers";

/**
 * Record creates sent together (lib/db.ts createRecord, docs/adr/0050-write-path-speed.md, fourth pass), on the
 * real local server: concurrent creates of one collection share an insert, each stored as create stores it, and a
 * create refused by a unique index fails alone, with the duplicate-key error of a single insert.
 */
describe("record creates sent together", () => {
  let db: Connection;
  const accountId = 5;

  beforeAll(async () => {
    db = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "record_inserts"));
    await db.dropDatabase();
    await toolModel(db).init();
  });
  afterAll(() => closeAllDatabases());

  const fields = (id: number, identifier: string) => ({ _id: id, account_id: accountId, name: `Tool ${id}`, identifier, type: "function" });

  it("stores concurrent creates as create does, and fails only the one a unique index refuses", async () => {
    const model = toolModel(db);
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5].map((id) => createRecord(model, fields(id, id === 4 ? "tool-2" : `tool-${id}`))));

    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(isDuplicateKeyError((outcomes[3] as PromiseRejectedResult).reason)).toBe(true);
    const [first] = outcomes;
    expect(first.status === "fulfilled" ? first.value.isNew : first.reason).toBe(false);

    const stored = await model.collection.find({}).sort({ _id: 1 }).toArray();
    expect(stored.map((doc) => doc._id)).toEqual([1, 2, 3, 5]);
    const viaCreate = (await model.create(fields(6, "tool-6"))).toObject();
    const viaGroup = stored[0]!;
    // The same fields, defaults and timestamps as a document model.create stored.
    expect(Object.keys(viaGroup).sort()).toEqual(Object.keys((await model.collection.findOne({ _id: 6 } as never))!).sort());
    expect(viaGroup.created_at).toBeInstanceOf(Date);
    expect(viaGroup.updated_at).toEqual(viaGroup.created_at);
    expect(viaGroup.sort_name).toBe(viaCreate.sort_name.replace("6", "1"));
  });

  it("rejects a record that fails validation before anything is sent", async () => {
    const model = toolModel(db);
    await expect(createRecord(model, { _id: 7, account_id: accountId, identifier: "tool-7" })).rejects.toThrow(/name/);
    expect(await model.collection.countDocuments({ _id: 7 } as never)).toBe(0);
  });
});
