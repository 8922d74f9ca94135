import type { Connection, Model } from "mongoose";
import { closeAllDatabases, connectDatabase, createRecord } from "../../lib/db";
import { isDuplicateKeyError } from "../../lib/errors";
import { entityModel } from "../../services/entities/model";
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
    await entityModel(db).init();
  });
  afterAll(() => closeAllDatabases());

  const fields = (id: number, identifier: string) => ({ _id: id, account_id: accountId, name: `Tool ${id}`, identifier, type: "function" });

  it("stores concurrent creates as create does, and fails only the one a unique index refuses", async () => {
    const model = toolModel(db);
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5].map((id) => createRecord(model, fields(id, id === 4 ? "tool-2" : `tool-${id}`))));

    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(isDuplicateKeyError((outcomes[3] as PromiseRejectedResult).reason)).toBe(true);
    const [first] = outcomes;
    // Each create answers its record as stored, free-form fields decoded, as a lean read returns it.
    expect(first.status === "fulfilled" ? first.value : first.reason).toEqual(await model.findOne({ _id: 1, account_id: accountId }).lean());

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

  it("stores what model.create stores, derived fields and free-form values included", async () => {
    const stored = async (model: Model<any>, id: number) => {
      const { _id, created_at, updated_at, ...rest } = (await model.collection.findOne({ _id: id } as never))!;
      expect(updated_at).toEqual(created_at);
      return rest;
    };
    const tool = { account_id: accountId, name: "Odd Keys", identifier: "odd", configuration: { "a.b": [1, { $c: null }], "": {} } };
    await createRecord(toolModel(db), { ...tool, _id: 20 });
    await toolModel(db).create({ ...tool, _id: 21, identifier: "odd-2" });
    expect({ ...(await stored(toolModel(db), 20)), identifier: "odd-2" }).toEqual(await stored(toolModel(db), 21));

    const entity = { account_id: accountId, agent_id: 3, agent_name: "Scout", entity_type_name: "Lead", attributes: { Email: "ada@example.com", "x.y": 1 } };
    await createRecord(entityModel(db), { ...entity, _id: 30 });
    await entityModel(db).create({ ...entity, _id: 31 });
    const created = await stored(entityModel(db), 30);
    expect(created).toEqual(await stored(entityModel(db), 31));
    expect(created).toMatchObject({ entity_type_key: "lead", attribute_keys: expect.arrayContaining(["Email"]) });
  });

  it("rejects a record that fails validation before anything is sent", async () => {
    const model = toolModel(db);
    await expect(createRecord(model, { _id: 7, account_id: accountId, identifier: "tool-7" })).rejects.toThrow(/name/);
    expect(await model.collection.countDocuments({ _id: 7 } as never)).toBe(0);
  });
});
