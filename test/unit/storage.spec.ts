import mongoose from "mongoose";
import { leanToJSON } from "../../lib/db";
import { defineResource } from "../../lib/resource";
import { defineModel, stored } from "../../lib/storage";

/** One declaration per field: its rules, and how it is stored (docs/adr/0051-fields-declare-storage.md). */
const gadgets = defineResource({
  name: "Gadget",
  collection: "gadgets",
  storage: { name: "Gadget", minimize: false, indexes: [[{ account_id: 1, created_at: -1, _id: -1 }]] },
  path: "/gadgets",
  idParam: "gadget_id",
  event: "gadget",
  fields: {
    title: { write: { type: "string", min: 1, max: 50 }, store: stored.string({ required: true }) },
    colour: { write: { type: "enum", values: ["red", "blue"], optional: true }, store: stored.string({ enum: ["red", "blue"], default: "red" }) },
    settings: { write: { type: "object", optional: true }, store: stored.json({ default: () => ({}) }) },
    owner_id: { store: stored.int({ default: null, ref: "users" }) },
    tags: { store: stored.strings() },
    token: { write: { type: "string", optional: true }, read: false },
    token_hash: { read: false, store: stored.string({ default: null, index: true }) },
    seen_at: { store: stored.date() },
    // Computed by a renderer: shown, never stored.
    size: { read: { type: "number" } },
  },
  list: { limits: { max: 20, def: 5 }, sort: { _id: 1 } },
});

describe("fields that declare their storage", () => {
  const db = mongoose.createConnection();
  afterAll(() => db.close());

  it("generate the mongoose schema: stored fields in order, their types, defaults, enums, indexes; nothing else", () => {
    const { paths } = gadgets.schema;
    expect(Object.keys(paths)).toEqual(["_id", "account_id", "title", "colour", "settings", "owner_id", "tags", "token_hash", "seen_at", "created_at", "updated_at"]);
    expect(paths.title!.instance).toBe("String");
    expect(paths.title!.isRequired).toBe(true);
    expect(paths.colour!.options).toMatchObject({ enum: ["red", "blue"], default: "red" });
    expect(paths.settings!.instance).toBe("FreeJson");
    expect(paths.tags!.instance).toBe("Array");
    expect(gadgets.schema.indexes()).toEqual(expect.arrayContaining([[{ token_hash: 1 }, expect.anything()], [{ account_id: 1, created_at: -1, _id: -1 }, expect.anything()]]));
    expect(gadgets.schema.get("minimize")).toBe(false);
  });

  it("render a record as the view declares it: defaults filled, hidden fields (read: false) left out, lean or not", () => {
    const model = gadgets.model(db);
    const doc = new model({ _id: 1, account_id: 2, title: "g", token_hash: "h", created_at: new Date(0), updated_at: new Date(0) });
    const json = doc.toJSON() as unknown as Record<string, unknown>;
    expect(json).toEqual({ id: 1, account_id: 2, title: "g", colour: "red", settings: {}, owner_id: null, tags: [], created_at: new Date(0), updated_at: new Date(0) });
    expect(leanToJSON(model, { _id: 1, account_id: 2, title: "g", token_hash: "h", created_at: new Date(0), updated_at: new Date(0) })).toEqual(json);
  });

  it("show a field that declares no rule by its stored value (nullable where its default is null)", () => {
    const schema = gadgets.view.schemas.Gadget as { required: string[]; properties: Record<string, unknown> };
    expect(schema.properties.owner_id).toEqual({ type: ["integer", "null"] });
    expect(schema.properties.tags).toEqual({ type: "array", items: { type: "string" } });
    expect(schema.properties.seen_at).toEqual({ type: "string", format: "date-time" });
    expect(schema.properties.token_hash).toBeUndefined();
    expect(schema.properties.token).toBeUndefined();
    expect(schema.required).toEqual(["id", "account_id", "created_at", "updated_at", "title", "colour", "settings", "owner_id", "tags", "seen_at", "size"]);
  });

  it("infer the record type: required where defaulted or required, optional otherwise, null where the default is", () => {
    type Gadget = typeof gadgets.types.record;
    const record: Gadget = {
      _id: 1, account_id: 2, created_at: new Date(), updated_at: new Date(),
      title: "g", colour: "blue", settings: { a: 1 }, owner_id: null, tags: [], token_hash: null,
    };
    // @ts-expect-error colour is one of its enum's values
    const wrong: Gadget["colour"] = "green";
    // @ts-expect-error a record has no `size` (computed) nor `token` (a param)
    const computed: Gadget["size"] = 1;
    expect([record, wrong, computed]).toHaveLength(3);
  });

  it("give a model of declared fields without a resource (defineModel), named records with their shared fields", () => {
    const { schema } = defineModel({ label: { store: stored.string({ default: "x" }) } }, { name: "Labelled", named: true, collection: "labelled" });
    expect(Object.keys(schema.paths).slice(0, 7)).toEqual(["_id", "account_id", "name", "sort_name", "identifier", "description", "label"]);
    expect(schema.get("collection")).toBe("labelled");
  });
});
