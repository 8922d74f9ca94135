import { isDeepStrictEqual } from "node:util";
import type { Connection, HydratedDocument, Model } from "mongoose";
import { leanToJSON } from "./db";
import { ERRORS } from "./errors";
import { changeOf } from "./events";
import type { EventsMethods } from "./events.mixin";
import { nextRecordId } from "./ids";
import { ruleToSchema, valueSchema, type JsonSchema } from "./json-schema";
import type { Ctx } from "./meta";
import { namedSort, paginationParams, sortParams, toPage, type PageLimits } from "./pagination";
import { respondCreated, respondNoContent } from "./responses";
import { defineModel, type ModelOptions, type Store } from "./storage";
import type { ListOptions, OwnedRecord, TenancyMethods } from "./tenancy.mixin";

/**
 * Resource declarations: each resource (and each response shape that is not a stored resource) is declared once,
 * as fields with fastest-validator rules, and everything else derives from that: the create and update params,
 * their TypeScript types, which fields a write may set, the OpenAPI response schemas, and the standard CRUD
 * actions with tenancy and change events (docs/adr/0023-resource-declaration.md). The shape follows
 * @moleculer/database's field definitions: one map of fields, each saying how it is validated, whether clients
 * may write it, whether it is shown and how it is stored, so the mongoose schema and the record type derive from
 * it too (lib/storage.ts, docs/adr/0051-fields-declare-storage.md).
 */

/** A fastest-validator rule object (declared `as const`, so the types below can read it). */
export type Rule = { readonly type: string; readonly [key: string]: unknown };

export interface FieldDecl {
  /** How a client's value is validated; a field without one is read-only (set by the service). */
  readonly write?: Rule;
  /**
   * What responses carry, as a rule describing the value; defaults to `write`, else to the stored value's rule;
   * false: never shown (a write-only password; a stored hash, dropped from the record's JSON too).
   */
  readonly read?: Rule | false;
  /** Writable only when creating, or only when updating (default: both). */
  readonly on?: "create" | "update";
  /** How the field is stored (lib/storage `stored.*`); a field without one is not stored (params or computed). */
  readonly store?: Store;
}
export type Fields = Readonly<Record<string, FieldDecl>>;

// ---- Types inferred from the rules (no hand-written twin interfaces) ----

type ValueOf<R> = R extends { type: "string"; enum: readonly (infer V)[] }
  ? V
  : R extends { type: "string" | "email" | "url" | "uuid" }
  ? string
  : R extends { type: "number" }
    ? number
    : R extends { type: "boolean" }
      ? boolean
      : R extends { type: "date" }
        ? Date
        : R extends { type: "enum"; values: readonly (infer V)[] }
          ? V
          : R extends { type: "array"; items: infer I }
            ? Value<I>[]
            : R extends { type: "multi"; rules: readonly (infer M)[] }
              ? Value<M>
              : R extends { type: "view"; view: { type: infer V } }
                ? V
                : R extends { type: "object"; props: infer P }
                ? { [K in keyof P]?: Value<P[K]> } & Record<string, unknown>
                : R extends { type: "object" }
                  ? Record<string, unknown>
                  : unknown;
/** The TypeScript type of a value a rule accepts. */
export type Value<R> = R extends { nullable: true } ? ValueOf<R> | null : ValueOf<R>;

type WriteRule<D> = D extends { write: infer R } ? R : never;
type Optional<R> = R extends { optional: true } ? true : R extends { default: unknown } ? true : false;
type WritableOn<F, On> = {
  [K in keyof F]: F[K] extends { write: Rule } ? (F[K] extends { on: infer O } ? (O extends On ? K : never) : K) : never;
}[keyof F];

/** Validated create params: required where the rule is neither optional nor defaulted. */
export type CreateParams<F> = {
  [K in WritableOn<F, "create"> as Optional<WriteRule<F[K]>> extends true ? never : K]: Value<WriteRule<F[K]>>;
} & { [K in WritableOn<F, "create"> as Optional<WriteRule<F[K]>> extends true ? K : never]?: Value<WriteRule<F[K]>> };
/** Validated update (PUT and PATCH) params: every writable field optional. */
export type UpdateParams<F> = { [K in WritableOn<F, "update">]?: Value<WriteRule<F[K]>> };

type ReadRule<D> = D extends { read: false } ? never : D extends { read: infer R } ? R : D extends { write: infer W } ? W : never;
type Shown<D> = [ReadRule<D>] extends [never] ? (D extends { read: false } ? never : D extends { store: Store<infer T> } ? T : never) : Value<ReadRule<D>>;
/** What every stored record's response has. */
export type RecordBase = { id: number; account_id: number; created_at: Date; updated_at: Date };
/** A response object of the shape `fields` declares. */
export type View<F> = { [K in keyof F as [Shown<F[K]>] extends [never] ? never : K]: Shown<F[K]> };

// ---- Response schemas ----

/** How an action answers: its status and body (a schema, "none" for 204, "csv" for text/csv), and the named schemas it refers to. */
export interface ResponseDecl {
  status: number;
  body: JsonSchema | "none" | "csv";
  schemas?: Record<string, JsonSchema>;
}

export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const PAGINATION: Record<string, JsonSchema> = {
  Pagination: {
    type: "object",
    required: ["total", "skip", "limit", "has_more"],
    properties: { total: { type: "integer" }, skip: { type: "integer" }, limit: { type: "integer" }, has_more: { type: "boolean" } },
    additionalProperties: false,
  },
};

/** The fields every stored record's response has (lib/db recordSchemaOptions). */
export const RECORD_FIELDS = {
  id: { read: { type: "number", integer: true } },
  account_id: { read: { type: "number", integer: true } },
  created_at: { read: { type: "date" } },
  updated_at: { read: { type: "date" } },
} as const satisfies Fields;

/** What every named record has (lib/db namedRecordSchema): a name, an identifier unique per account, a description. */
export const namedFields = <I extends Rule>(identifier: I) =>
  ({
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifier },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
  }) as const;

/** A read rule naming another view (e.g. a team's agents are Agent objects): its schema by reference. */
export const viewRule = <V extends { name: string; schemas: Record<string, JsonSchema> }>(view: V) => ({ type: "view", view }) as const;

type ViewRule = { type: "view"; view: { name: string; schemas: Record<string, JsonSchema> } };
const isViewRule = (rule: unknown): rule is ViewRule => (rule as { type?: string } | undefined)?.type === "view";

/** A field's response schema: a view by reference (alone or as array items), anything else from its rule. */
function fieldSchema(rule: Rule): JsonSchema {
  if (isViewRule(rule)) return schemaRef(rule.view.name);
  if (rule.type === "array" && isViewRule(rule.items)) return { type: "array", items: schemaRef(rule.items.view.name) };
  return valueSchema({ ...rule, optional: false });
}

/** The named schemas a view refers to, so a document listing it lists them too. */
function referencedSchemas(fields: Fields): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const f of Object.values(fields)) {
    const rule = shownRule(f);
    const nested = isViewRule(rule) ? rule : rule?.type === "array" && isViewRule(rule.items) ? rule.items : undefined;
    if (nested) Object.assign(out, nested.view.schemas);
  }
  return out;
}

/** How responses show a field: its read rule, else its write rule, else its stored value's rule; none: not shown. */
const shownRule = (f: FieldDecl): Rule | undefined => (f.read === undefined ? (f.write ?? f.store?.rule) : f.read || undefined);

/** The JSON Schema of a response object: every shown field, required unless its read rule says optional; nothing else. */
export function viewSchema(fields: Fields): JsonSchema {
  const shown = Object.entries(fields).flatMap(([key, f]) => {
    const rule = shownRule(f);
    return rule ? [[key, rule, f.read ? f.read.optional === true : false] as const] : [];
  });
  return {
    type: "object",
    required: shown.filter(([, , optional]) => !optional).map(([key]) => key),
    properties: Object.fromEntries(shown.map(([key, rule]) => [key, fieldSchema(rule)])),
    additionalProperties: false,
  };
}

/** A named response shape (a resource's record, or anything else an action returns), with its response declarations. */
export function defineView<F extends Fields>(name: string, fields: F) {
  const schemas = { ...referencedSchemas(fields), [name]: viewSchema(fields) };
  const ref = schemaRef(name);
  const page = { type: "object", required: ["data", "pagination"], properties: { data: { type: "array", items: ref }, pagination: schemaRef("Pagination") }, additionalProperties: false };
  return {
    name,
    fields,
    schemas,
    /** 200 with one object (or `status`, e.g. 201). */
    one: (status = 200): ResponseDecl => ({ status, body: ref, schemas }),
    /** 200 with a bare array of them. */
    array: (): ResponseDecl => ({ status: 200, body: { type: "array", items: ref }, schemas }),
    /** 200 with a page {data, pagination} of them; `extra` lists further properties (e.g. entities' facets). */
    page: (extra: Record<string, JsonSchema> = {}): ResponseDecl => ({
      status: 200,
      body: { ...page, properties: { ...page.properties, ...extra } },
      schemas: { ...schemas, ...PAGINATION },
    }),
    /** The type of one response object, for `satisfies` checks in renderers. */
    type: undefined as unknown as View<F>,
  };
}

/** A response body that is not a named shape (e.g. `{secret}`), from a params-like map of read rules. */
export function plainResponse(props: Record<string, Rule>, status = 200): ResponseDecl {
  return { status, body: viewSchema(Object.fromEntries(Object.entries(props).map(([k, read]) => [k, { read }]))) };
}

/** A named response schema from a rule describing the whole body (e.g. the team configuration document). */
export function ruleResponse(name: string, rule: Rule, status = 200): ResponseDecl {
  return { status, body: schemaRef(name), schemas: { [name]: valueSchema(rule) } };
}

/** A request body an action checks itself rather than through `params` (its errors are its own): its named schema. */
export interface BodyDecl {
  body: JsonSchema;
  schemas: Record<string, JsonSchema>;
}
export function ruleBody(name: string, rule: Rule): BodyDecl {
  return { body: schemaRef(name), schemas: { [name]: ruleToSchema(rule) } };
}

export const NO_CONTENT: ResponseDecl = { status: 204, body: "none" };

// ---- Resources ----

export interface ResourceOptions<F extends Fields> {
  /**
   * Component name in the OpenAPI document, and, in words, the label in messages ("Tool 12 not found", "Webhook
   * subscription 3 not found") unless `label` is given.
   */
  name: string;
  label?: string;
  /** Collection: the id sequence, the event subjects (lib/events changeOf) and the model's collection. */
  collection: string;
  /** The model built from the fields' storage (lib/storage defineModel): name, indexes, collection. */
  storage: ModelOptions;
  /** URL of the collection under /api/v1, e.g. "/tools", and the path parameter naming one record. */
  path: string;
  idParam: string;
  /** The path parameter takes a numeric id or the record's identifier (agents, teams). */
  byRef?: boolean;
  /** Per-account identifier given or generated from the name ("support-bot", "support-bot-2"). */
  identifier?: boolean;
  /**
   * Path segments a sibling route takes at the identifier's place (GET /agents/directory): never an identifier, so
   * every identifier names its record (a given one is a 422, a generated one is numbered past them).
   */
  routeWords?: readonly string[];
  /** Change events `<event>.created/updated/deleted`, recorded with every write (lib/events.mixin); every resource has them. */
  event: string;
  /** Updates answer PUT and PATCH (the same: only given fields change); false: PUT only (API keys). */
  patch?: boolean;
  fields: F;
  list: {
    limits: PageLimits;
    /** Fixed order, or clients choose among `sortable` (named records sort "name" case-insensitively). */
    sort?: Record<string, 1 | -1>;
    sortable?: readonly string[];
    /** Answers a bare array (the interface's API key list) instead of a page. */
    bare?: boolean;
  };
}

const optionalRule = (rule: Rule): Rule => {
  const { default: _default, ...rest } = rule;
  return { ...rest, optional: true };
};

/** A resource: its declaration and what derives from it. */
export function defineResource<const F extends Fields, const M extends ModelOptions>(options: ResourceOptions<F> & { storage: M }) {
  const fields = { ...RECORD_FIELDS, ...options.fields };
  const stored = defineModel(options.fields, { ...options.storage, sortable: options.list.sortable });
  const view = defineView(options.name, fields);
  const writable = (on: "create" | "update") =>
    Object.entries(options.fields).filter(([, f]) => f.write && (!f.on || f.on === on)) as [string, FieldDecl & { write: Rule }][];
  const createKeys = writable("create").map(([key]) => key);
  const updateKeys = writable("update").map(([key]) => key);
  const { singular } = nounsOf(options.label ?? options.name);
  const idRule = options.byRef
    ? { type: "string", min: 1, max: 100, description: `The ${singular}'s id or identifier` }
    : { type: "number", integer: true, positive: true, convert: true, description: `The ${singular}'s id` };
  return {
    ...options,
    /** The model on a given connection, its schema generated from the fields' storage. */
    model: stored.model,
    schema: stored.schema,
    view,
    idParams: { [options.idParam]: idRule } as Record<string, Rule>,
    createParams: Object.fromEntries(writable("create").map(([key, f]) => [key, f.write])) as Record<string, Rule>,
    /** Every writable field optional and without defaults: an update changes only what it names. */
    updateParams: Object.fromEntries(writable("update").map(([key, f]) => [key, optionalRule(f.write)])) as Record<string, Rule>,
    /** The fields a write may set from validated params; extra body keys never reach the database. */
    pick(params: object, on: "create" | "update"): Record<string, unknown> {
      const out: Record<string, unknown> = {};
      for (const key of on === "create" ? createKeys : updateKeys) {
        const value = (params as Record<string, unknown>)[key];
        if (value !== undefined) out[key] = value;
      }
      return out;
    },
    location: (id: number) => `/api/v1${options.path}/${id}`,
    types: undefined as unknown as { create: CreateParams<F>; update: UpdateParams<F>; view: View<typeof fields>; record: typeof stored.record },
  };
}
/** Any resource, as the standard actions take it (its model untyped: each resource's own is typed by its fields). */
export type Resource = Omit<ReturnType<typeof defineResource<Fields, ModelOptions>>, "model" | "schema"> & { model: (db: Connection) => Model<any> };

/** What the CRUD actions need of their service (TenancyMixin, EventsMixin, MongoMixin). */
type Host = TenancyMethods & EventsMethods & { db: Connection };
type Doc = HydratedDocument<OwnedRecord & { identifier?: string; name?: string }>;

export type CrudAction = "list" | "create" | "get" | "update" | "remove";

/** Where a service adds its rules to the standard actions; `this` is the service. */
export interface CrudHooks<S = any, R = any> {
  /** The standard actions this service takes (default: all); it writes the others itself. */
  actions?: CrudAction[];
  /**
   * For services that copy params onto a document themselves (associations resolved, merges, hashes): applies the
   * picked fields to the record being updated and, where `draft` is given, to a new document made from it when creating.
   */
  apply?(this: S, ctx: Ctx<any>, doc: HydratedDocument<R>, fields: Record<string, any>): Promise<void> | void;
  /** The fields a new document starts from before `apply` (its defaults); without it creates do not `apply`. */
  draft?(this: S, fields: Record<string, any>): object;
  /** The record to store from the picked create fields: checks (throwing 4xx) and computed fields. */
  creating?(this: S, ctx: Ctx<any>, fields: Record<string, unknown>): Promise<Record<string, unknown>> | Record<string, unknown>;
  /** The changes to apply from the picked update fields, given the current record. */
  updating?(this: S, ctx: Ctx<any>, doc: HydratedDocument<R>, changes: Record<string, unknown>): Promise<Record<string, unknown>> | Record<string, unknown>;
  /** Runs before a delete is recorded: refusals (409) and cleanup in other services. */
  removing?(this: S, ctx: Ctx<any>, doc: HydratedDocument<R>): Promise<void>;
  /** Runs after the record is deleted, within its change (e.g. removing what belonged to it). */
  removed?(this: S, ctx: Ctx<any>, doc: HydratedDocument<R>): Promise<void>;
  /** Response objects of records, documents or lean list rows (default: their toJSON); also the data of their change events. */
  render?(this: S, ctx: Ctx<any>, records: R[]): Promise<object[]> | object[];
  /** Reads and renders a page itself (default: listOwned, then `render`). */
  list?(this: S, ctx: Ctx<any>, filter: object, opts: ListOptions): Promise<{ data: object[]; total: number }>;
  /** Extra list params and the filter they make (e.g. `status`). */
  filters?: { params: Record<string, Rule>; filter(params: Record<string, any>): object };
  /** Extra params of the delete (e.g. agents' `force`). */
  removeParams?: Record<string, Rule>;
}

/**
 * The standard actions of a resource: list (paginated, sorted, filtered), get (by id or identifier), create (201
 * with Location), update (PUT and PATCH), remove (204). Every query carries the caller's account (TenancyMixin)
 * and every write records its change event. `prefix` names them (tasks' scheduled tasks: scheduledList, ...).
 */
export function crudActions(resource: Resource, hooks: CrudHooks = {}, prefix = "") {
  const { path, idParam } = resource;
  const { singular, plural, article } = nounsOf(resource.label ?? resource.name);
  // In words, as the services' own lookups write it: "Webhook subscription 3 not found", not "WebhookSubscription 3".
  const label = singular[0]!.toUpperCase() + singular.slice(1);
  const name = (action: string) => (prefix ? `${prefix}${action[0]!.toUpperCase()}${action.slice(1)}` : action);
  const one = `${path}/:${idParam}`;
  const model = (host: Host) => resource.model(host.db) as Model<any>;

  async function render(this: Host, ctx: Ctx<any>, docs: Doc[]): Promise<object[]> {
    return hooks.render ? hooks.render.call(this, ctx, docs) : docs.map((d) => d.toJSON());
  }
  /** Response objects of records as lean reads and creates return them. */
  async function renderRecords(this: Host, ctx: Ctx<any>, records: object[]): Promise<object[]> {
    return hooks.render ? hooks.render.call(this, ctx, records) : records.map((record) => leanToJSON(model(this), record));
  }
  async function listed(this: Host, ctx: Ctx<any>, filter: object, opts: ListOptions): Promise<{ data: object[]; total: number }> {
    const { rows, total } = await this.listOwned(ctx, model(this), filter, opts);
    return { data: await renderRecords.call(this, ctx, rows), total };
  }
  async function find(this: Host, ctx: Ctx<any>): Promise<Doc> {
    const ref = ctx.params[idParam];
    return (resource.byRef ? this.findOwnedByRef(ctx, model(this), ref, label) : this.findOwned(ctx, model(this), ref, label)) as Promise<Doc>;
  }
  /** The fields of a new record as `apply` leaves them on a fresh document (its ids and timestamps are the create's). */
  async function applyToDraft(this: Host, ctx: Ctx<any>, picked: Record<string, unknown>): Promise<Record<string, unknown>> {
    const draft = new (model(this))(hooks.draft?.call(this, picked) ?? {});
    await hooks.apply!.call(this, ctx, draft, picked);
    const { _id, account_id, created_at, updated_at, ...record } = draft.toObject();
    return record;
  }
  /** Writes inside the record's change event. */
  function recorded<T extends object>(this: Host, type: string, record: { _id: number; account_id: number }, write: () => Promise<T>): Promise<T> {
    return this.recordChange(changeOf(`${resource.event}.${type}`, resource.collection, record), write);
  }

  const { sort, sortable, limits, bare } = resource.list;
  const listParams = {
    ...(sortable ? sortParams(sortable) : {}),
    ...paginationParams(limits),
    ...hooks.filters?.params,
  };

  const actions: Record<CrudAction, object> = {
    list: {
      rest: `GET ${path}`,
      summary: `List ${plural}`,
      params: listParams,
      response: bare ? resource.view.array() : resource.view.page(),
      async handler(this: Host, ctx: Ctx<any>) {
        const { skip, limit, sort_by, sort_order } = ctx.params;
        const order = sortable ? namedSort(sort_by, sort_order) : sort!;
        const filter = hooks.filters?.filter(ctx.params) ?? {};
        const { data, total } = await (hooks.list ?? listed).call(this, ctx, filter, { skip, limit, sort: order });
        return bare ? data : toPage(data, total, skip, limit);
      },
    },

    create: {
      rest: `POST ${path}`,
      summary: `Create ${article} ${singular}`,
      params: resource.createParams,
      response: resource.view.one(201),
      async handler(this: Host, ctx: Ctx<any>) {
        const picked = resource.pick(ctx.params, "create");
        refuseRouteWord(resource, picked.identifier);
        const applied = hooks.apply && hooks.draft ? await applyToDraft.call(this, ctx, picked) : picked;
        const fields = hooks.creating ? await hooks.creating.call(this, ctx, applied) : applied;
        const _id = await nextRecordId(this.db, resource.collection);
        const body = await recorded.call(this, "created", { _id, account_id: this.accountOf(ctx) }, async () => {
          const record = resource.identifier
            ? await this.createIdentified(ctx, model(this), { ...fields, _id }, { name: String(picked.name), identifier: picked.identifier as string | undefined, label, reserved: resource.routeWords ?? [] })
            : await this.createOwned(ctx, model(this), { ...fields, _id });
          // A created record comes back as a lean read's (lib/db createRecord), so it renders as a list row does.
          return (await renderRecords.call(this, ctx, [record]))[0]!;
        });
        return respondCreated(ctx, resource.location(_id), body);
      },
    },

    get: {
      rest: `GET ${one}`,
      summary: `Get ${article} ${singular}`,
      params: resource.idParams,
      response: resource.view.one(),
      async handler(this: Host, ctx: Ctx<any>) {
        return (await render.call(this, ctx, [await find.call(this, ctx)]))[0];
      },
    },

    update: {
      rest: resource.patch === false ? `PUT ${one}` : [`PUT ${one}`, `PATCH ${one}`],
      operationIds: [name("update"), name("patch")],
      summary: `Update ${article} ${singular} (only the given fields change)`,
      params: { ...resource.idParams, ...resource.updateParams },
      response: resource.view.one(),
      async handler(this: Host, ctx: Ctx<any>) {
        const doc = await find.call(this, ctx);
        const picked = resource.pick(ctx.params, "update");
        refuseRouteWord(resource, picked.identifier);
        const before = doc.toObject();
        if (hooks.apply) await hooks.apply.call(this, ctx, doc, picked);
        else doc.set(hooks.updating ? await hooks.updating.call(this, ctx, doc, picked) : picked);
        // Nothing differs: no write, so no event either. Mongoose marks a free-form (JSON) field set to an equal
        // value modified, so the record is compared as a whole too.
        if (!doc.isModified() || isDeepStrictEqual(doc.toObject(), before)) return (await render.call(this, ctx, [doc]))[0]!;
        return recorded.call(this, "updated", doc, async () => {
          if (resource.identifier) await this.saveIdentified(doc as never, label);
          else await doc.save();
          return (await render.call(this, ctx, [doc]))[0]!;
        });
      },
    },

    remove: {
      rest: `DELETE ${one}`,
      summary: `Delete ${article} ${singular}`,
      params: { ...resource.idParams, ...hooks.removeParams },
      response: NO_CONTENT,
      async handler(this: Host, ctx: Ctx<any>) {
        const doc = await find.call(this, ctx);
        await hooks.removing?.call(this, ctx, doc);
        await recorded.call(this, "deleted", doc, async () => {
          await model(this).deleteOne({ _id: doc._id, account_id: doc.account_id });
          await hooks.removed?.call(this, ctx, doc);
          return { id: doc._id };
        });
        return respondNoContent(ctx);
      },
    },
  };
  const taken = hooks.actions ?? (Object.keys(actions) as CrudAction[]);
  return Object.fromEntries(taken.map((action) => [name(action), actions[action]]));
}

/** 422 for an identifier a sibling route takes (Resource.routeWords). */
function refuseRouteWord(resource: Resource, identifier: unknown): void {
  // The router matches paths whatever their case ("/agents/Directory" is the directory too).
  if (typeof identifier === "string" && resource.routeWords?.includes(identifier.toLowerCase())) {
    throw ERRORS.validation([{ field: "identifier", type: "reserved", message: `The identifier '${identifier}' names the route ${resource.path}/${identifier}; choose another` }]);
  }
}

/** How summaries name a resource's records: "Account API key" gives "an account API key", "account API keys". */
function nounsOf(label: string) {
  const words = label.replace(/([a-z])([A-Z])/g, "$1 $2").split(" ");
  const singular = words.map((w) => (w === "Api" ? "API" : w.toLowerCase())).join(" ");
  return { singular, plural: `${singular}s`, article: /^[aeiou]/.test(singular) ? "an" : "a" };
}

/** The EventsMixin `records` entry of a resource: how a stored record becomes its event data (its response object). */
export function eventRecords(resource: Resource) {
  return {
    [resource.collection]: function (this: { db: Connection }, record: Record<string, unknown>) {
      return resource.model(this.db).hydrate(record).toJSON() as object;
    },
  };
}
