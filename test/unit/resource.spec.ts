import { crudActions, defineResource, defineView, viewRule } from "../../lib/resource";
import { stored } from "../../lib/storage";

const widgets = defineResource({
  name: "Widget",
  collection: "widgets",
  storage: { name: "Widget" },
  path: "/widgets",
  idParam: "widget_id",
  event: "widget",
  fields: {
    name: { write: { type: "string", min: 1, max: 10 }, store: stored.string({ required: true }) },
    size: { write: { type: "number", integer: true, optional: true, default: 3 }, store: stored.int({ default: 3 }) },
    secret: { write: { type: "string", optional: true }, read: false },
    secret_hash: { read: false, store: stored.string({ default: null }) },
    kind: { write: { type: "enum", values: ["a", "b"], optional: true }, on: "create", store: stored.string({ enum: ["a", "b"] }) },
    note: { write: { type: "string", optional: true, nullable: true }, store: stored.string({ default: null }) },
    made_by: { store: stored.int({ default: null, ref: "users" }) },
  },
  list: { limits: { max: 20, def: 5 }, sort: { _id: 1 } },
});

describe("a resource declaration", () => {
  it("derives create params (as declared) and update params (all optional, no defaults, only updatable fields)", () => {
    expect(Object.keys(widgets.createParams)).toEqual(["name", "size", "secret", "kind", "note"]);
    expect(widgets.updateParams).toEqual({
      name: { type: "string", min: 1, max: 10, optional: true },
      size: { type: "number", integer: true, optional: true },
      secret: { type: "string", optional: true },
      note: { type: "string", optional: true, nullable: true },
    });
  });

  it("picks only the writable, given fields of a write", () => {
    const body = { name: "w", kind: "a", made_by: 9, account_id: 2, note: undefined };
    expect(widgets.pick(body, "create")).toEqual({ name: "w", kind: "a" });
    expect(widgets.pick(body, "update")).toEqual({ name: "w" });
  });

  it("describes the response: record fields, shown fields required and nullable where they can be null, nothing else", () => {
    const schema = widgets.view.schemas.Widget as { required: string[]; properties: Record<string, unknown>; additionalProperties: boolean };
    expect(schema.required).toEqual(["id", "account_id", "created_at", "updated_at", "name", "size", "kind", "note", "made_by"]);
    expect(schema.properties.secret).toBeUndefined();
    expect(schema.properties.name).toEqual({ type: "string" });
    expect(schema.properties.note).toEqual({ type: ["string", "null"] });
    expect(schema.properties.made_by).toEqual({ type: ["integer", "null"] });
    expect(schema.properties.created_at).toEqual({ type: "string", format: "date-time" });
    expect(schema.additionalProperties).toBe(false);
    expect(widgets.view.page()).toMatchObject({ status: 200, body: { required: ["data", "pagination"] }, schemas: { Widget: schema, Pagination: {} } });
  });

  it("refers to other views by name and carries their schemas along", () => {
    const Box = defineView("Box", { widgets: { read: { type: "array", items: viewRule(widgets.view) } } });
    expect(Box.schemas.Box).toMatchObject({ properties: { widgets: { type: "array", items: { $ref: "#/components/schemas/Widget" } } } });
    expect(Box.schemas.Widget).toBe(widgets.view.schemas.Widget);
  });

  it("infers the TypeScript types of params and responses from the rules", () => {
    const create: typeof widgets.types.create = { name: "w", kind: "b", note: null };
    const update: typeof widgets.types.update = { size: 4 };
    const view: Partial<typeof widgets.types.view> = { made_by: null, kind: "a" };
    // @ts-expect-error name is required on create
    const missing: typeof widgets.types.create = { size: 1 };
    // @ts-expect-error kind is set only on create
    const late: typeof widgets.types.update = { kind: "a" };
    expect([create, update, view, missing, late]).toHaveLength(5);
  });

  it("gives the standard actions their routes, statuses and names", () => {
    const actions = crudActions(widgets, { actions: ["list", "update", "remove"] }, "widget") as Record<string, { rest: unknown; response: { status: number } }>;
    expect(Object.keys(actions)).toEqual(["widgetList", "widgetUpdate", "widgetRemove"]);
    expect(actions.widgetUpdate!.rest).toEqual(["PUT /widgets/:widget_id", "PATCH /widgets/:widget_id"]);
    expect(actions.widgetRemove!.response.status).toBe(204);
    expect((crudActions(widgets) as Record<string, { response: { status: number } }>).create!.response.status).toBe(201);
  });
});
