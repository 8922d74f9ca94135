import mongoose, { Schema, type Connection, type Model } from "mongoose";
import { closeAllDatabases, connectDatabase, recordSchemaOptions } from "../../lib/db";
import { freeJson, freeJsonFields, jsonProblem, jsonProblemMessage, MAX_JSON_DEPTH } from "../../lib/free-json";
import { UnitOfWork } from "../../lib/unit-of-work";
import { databaseUrl } from "../harness/servers";
import { crossAccount } from "../../lib/tenancy-guard";

/**
 * Free-form fields on the test database (the local MongoDB-compatible server, or MONGO_URL): every way the
 * services write and read them keeps JSON that MongoDB field names cannot hold, exactly.
 */

interface Note {
  _id: number;
  account_id: number;
  body: unknown;
  extra: unknown;
}

/** JSON no MongoDB or FerretDB v1 document could hold as fields: dotted, `$` and empty keys, nested arrays, depth. */
const AWKWARD = {
  "api.base_url": "https://x",
  $where: { "$gt": [1, { "": null }] },
  "": "empty key",
  rows: [[1, 2], [3, 4], [[[]]]],
  unicode: "ünïcødé ✓ 😀 \u2028",
  "lone \ud800 surrogate": "a\udfffb",
  // Keys mongoose's clone skips (update values are cloned; documents keep them).
  constructor: { prototype: { x: 1 } },
  big: 1.7976931348623157e308,
  small: -5e-324,
  int: 9007199254740991,
  deep: JSON.parse(`${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}`),
};

describe("free-form JSON fields on the database", () => {
  let db: Connection;
  let notes: Model<Note>;

  beforeAll(async () => {
    db = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "free_json"));
    const schema = new Schema<Note>(
      { _id: Number, account_id: Number, body: freeJson({ default: () => ({}) }), extra: freeJson({ default: null }) },
      { ...recordSchemaOptions<Note>(), collection: "notes" },
    );
    schema.plugin(freeJsonFields);
    // Free-form JSON round trips, read by id: tenancy is not what this file tests.
    crossAccount("test: free-form JSON by id", schema);
    notes = db.model<Note>("Note", schema);
    await notes.deleteMany({});
  });
  afterAll(() => closeAllDatabases());

  it("keeps any JSON through create, documents, toJSON, lean reads, lean cursors and $set updates", async () => {
    const created = await notes.create({ _id: 1, account_id: 1, body: AWKWARD });
    expect(created.body).toEqual(AWKWARD);
    expect(created.toJSON()).toEqual({ id: 1, account_id: 1, body: AWKWARD, extra: null, created_at: expect.any(Date), updated_at: expect.any(Date) });
    expect((await notes.findById(1))!.body).toEqual(AWKWARD);
    expect((await notes.findById(1).lean<Note>())!.body).toEqual(AWKWARD);
    expect((await notes.find({ account_id: 1 }).lean<Note[]>())[0]!.body).toEqual(AWKWARD);
    const streamed: unknown[] = [];
    for await (const note of notes.find({}).lean<Note>().cursor()) streamed.push(note.body);
    expect(streamed).toEqual([AWKWARD]);

    const { constructor: _skipped, ...cloneable } = AWKWARD;
    const updated = await notes.findOneAndUpdate({ _id: 1 }, { $set: { extra: [cloneable] } }, { returnDocument: "after" }).lean<Note>();
    expect(updated).toMatchObject({ body: AWKWARD, extra: [cloneable] });
    await notes.updateOne({ _id: 1 }, { $set: { body: { "a.b": [[null]] } } });
    const doc = (await notes.findById(1))!;
    expect(doc.body).toEqual({ "a.b": [[null]] });
    doc.set("extra", { $ref: "x" });
    await doc.save();
    expect((await notes.findById(1).lean<Note>())!.extra).toEqual({ $ref: "x" });
    // A lean record hydrated (as the teams service renders one) reads back the same.
    await notes.create({ _id: 5, account_id: 1, body: AWKWARD });
    expect(notes.hydrate((await notes.findById(5).lean<Note>())!).toJSON().body).toEqual(AWKWARD);
    // Defaults and null: an empty object and a real null.
    await notes.create({ _id: 2, account_id: 1 });
    expect(await notes.findById(2).lean<Note>()).toMatchObject({ body: {}, extra: null });
  });

  it("rolls a unit of work back to values MongoDB field names cannot hold", async () => {
    await notes.create({ _id: 3, account_id: 1, body: AWKWARD });
    const before = (await notes.findById(3).lean<Note>())!;
    const uow = new UnitOfWork();
    const updated = await uow.update(notes, before, { body: { replaced: true }, extra: AWKWARD });
    expect(updated).toMatchObject({ body: { replaced: true }, extra: AWKWARD });
    expect((await notes.findById(3).lean<Note>())!.extra).toEqual(AWKWARD);
    await uow.rollback();
    expect((await notes.findById(3).lean<Note>())!.extra).toBeNull();
    expect((await notes.findById(3).lean<Note>())!.body).toEqual(AWKWARD);
  });

  it("reads records written before the encoding (raw objects) without failing", async () => {
    await notes.collection.insertOne({ _id: 4, account_id: 1, body: { plain: [1, 2] }, extra: null } as never);
    expect((await notes.findById(4))!.toJSON()).toMatchObject({ body: { plain: [1, 2] } });
    expect((await notes.findById(4).lean<Note>())!.body).toEqual({ plain: [1, 2] });
  });

  it("measures depth and NUL keys without recursion", () => {
    expect(jsonProblem(AWKWARD)).toBeNull();
    const nul = jsonProblem({ a: [{ "b\u0000": 1 }] })!;
    expect(nul).toMatchObject({ type: "jsonKey", path: ["a", 0, "b\u0000"] });
    expect(jsonProblemMessage(nul)).toBe('Keys must not contain the NUL character (\\u0000) (at a[0]["b\\u0000"])');
    expect(jsonProblem(JSON.parse('{"a": [{"__proto__": {}}]}'))).toMatchObject({ type: "jsonKey", path: ["a", 0, "__proto__"] });
    const tooDeep = JSON.parse(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`);
    expect(jsonProblem(tooDeep)).toMatchObject({ type: "jsonDepth" });
    const veryDeep = JSON.parse(`${'{"a":'.repeat(200_000)}1${"}".repeat(200_000)}`);
    expect(jsonProblem(veryDeep, { maxDepth: 100 })).toMatchObject({ type: "jsonDepth", path: Array(100).fill("a") });
  });

  it("registers the schema type once", () => {
    expect((mongoose.Schema.Types as unknown as Record<string, unknown>).FreeJson).toBeDefined();
  });
});
