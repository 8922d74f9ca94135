import { MongoServerError, type Collection, type Document as BsonDocument } from "mongodb";
import mongoose, { Schema, type Connection, type Model, type SchemaDefinition, type SchemaOptions } from "mongoose";
import { writeErrorsOf } from "./errors";
import { decodeFreeJsonFields, freeJsonFields } from "./free-json";
import { groupCommit } from "./group-commit";
import { tenancyGuard } from "./tenancy-guard";

// Every model's queries on tenant data must name the account (lib/tenancy-guard.ts): applied when a model is built.
mongoose.plugin(tenancyGuard);

/** One connection per URL per process: brokers started side by side in one process share it. */
const connections = new Map<string, Promise<Connection>>();

/** Opens (or reuses) the connection for `url`; services await it in `started`. */
export function connectDatabase(url: string): Promise<Connection> {
  let pending = connections.get(url);
  if (!pending) {
    pending = mongoose
      .createConnection(url, { serverSelectionTimeoutMS: 10_000, autoIndex: true })
      .asPromise()
      .catch((err) => {
        connections.delete(url);
        throw err;
      });
    connections.set(url, pending);
  }
  return pending;
}

/** Pings every database this process opened (readiness probes); rejects when one does not answer. */
export async function pingDatabases(): Promise<void> {
  const opened = await Promise.all(connections.values());
  await Promise.all(opened.map((connection) => connection.db!.admin().command({ ping: 1 })));
}

/** Closes every connection this process opened (process shutdown and test teardown). */
export async function closeAllDatabases(): Promise<void> {
  const pending = [...connections.values()];
  connections.clear();
  await Promise.all(pending.map(async (p) => (await p.catch(() => null))?.close()));
}


type Json = Record<string, unknown>;

/**
 * Shared schema options: integer `_id` shown as `id` first, snake_case timestamps, `hidden` fields (hashes,
 * outboxes) never serialised, and `standIns`: a stored field shown, in its own place, under the name of a field
 * the record lacks.
 */
export function recordSchemaOptions<T>(hidden: string[] = [], standIns: Record<string, string> = {}): SchemaOptions<T> {
  const drop = new Set(["_id", "__v", ...hidden]);
  return {
    versionKey: false,
    timestamps: { createdAt: "created_at", updatedAt: "updated_at" },
    toJSON: {
      transform(_doc, ret) {
        const stored = ret as Json;
        const out: Json = { id: stored._id };
        for (const [key, value] of Object.entries(stored)) {
          const standsFor = standIns[key];
          if (standsFor !== undefined) {
            if (stored[standsFor] === undefined) out[standsFor] = value;
          } else if (!drop.has(key)) out[key] = value;
        }
        return out;
      },
    },
  };
}

/** A schema path as mongoose keeps it (its default and sub-schema are not in its typings). */
interface PathType {
  defaultValue?: unknown;
  /** A single nested sub-document's schema. */
  $isSingleNested?: boolean;
  schema?: Schema;
  /** skipCast: the default as declared (free-form defaults are declared decoded; casting would encode them). */
  getDefault(doc: undefined, init: false, options: { skipCast: true }): unknown;
}
/** How lean records of a schema are completed: the paths with defaults, in the two passes mongoose fills them. */
interface LeanDefaults {
  /** Values (and array defaults): mongoose sets them before it copies the stored fields in. */
  before: [string, PathType][];
  /** Computed defaults: set after the stored fields. */
  after: [string, PathType][];
  /** Sub-documents, completed by their own schema. */
  nested: [string, Schema][];
}
const leanDefaults = new WeakMap<Schema, LeanDefaults>();
const DECLARED = { skipCast: true } as const;

function defaultsOf(schema: Schema): LeanDefaults {
  let found = leanDefaults.get(schema);
  if (!found) {
    found = { before: [], after: [], nested: [] };
    for (const [path, schemaType] of Object.entries(schema.paths)) {
      if (path.includes(".")) continue;
      const type = schemaType as unknown as PathType;
      if (type.$isSingleNested && type.schema) found.nested.push([path, type.schema]);
      const value = type.defaultValue;
      if (value === undefined) continue;
      const computed = typeof value === "function" && !(value as { $runBeforeSetters?: boolean }).$runBeforeSetters;
      found[computed ? "after" : "before"].push([path, type]);
    }
    leanDefaults.set(schema, found);
  }
  return found;
}

/**
 * A stored record with the defaults of the fields it lacks, in the order mongoose gives them: a record gets its
 * value defaults before its stored fields, a sub-document after them; computed defaults come last in both.
 */
function withDefaults(schema: Schema, stored: Json, subdocument = false): Json {
  const { before, after, nested } = defaultsOf(schema);
  const full: Json = subdocument ? { ...stored } : {};
  for (const [path, type] of before) if (stored[path] === undefined) full[path] = type.getDefault(undefined, false, DECLARED);
  if (!subdocument) Object.assign(full, stored);
  for (const [path, type] of after) if (full[path] === undefined) full[path] = type.getDefault(undefined, false, DECLARED);
  for (const [path, sub] of nested) {
    const value = full[path];
    if (value && typeof value === "object" && !Array.isArray(value)) full[path] = withDefaults(sub, value as Json, true);
  }
  return full;
}

/**
 * A lean record's JSON, equal to its document's `toJSON()` key for key and in the same order. Lists read lean
 * (building documents was a quarter of a list's CPU), so a record stored before a field existed gets the field's
 * default here where mongoose would put it. Free-form fields are already decoded by the lean read (lib/free-json).
 */
export function leanToJSON(model: Model<any>, record: object): Json {
  const full = withDefaults(model.schema, record as Json);
  const transform = (model.schema.get("toJSON") as { transform?: (doc: unknown, ret: Json) => Json } | undefined)?.transform;
  return transform ? transform(undefined, full) : full;
}

/** Per schema, how its records derive fields from their others (deriveFields). */
const derivations = new WeakMap<Schema, ((doc: any) => void)[]>();

/**
 * Fields of a schema's records derived from their other fields by `derive`, given the document: set before every
 * validation (so on every save) and on every create (createRecord, which does not validate).
 */
export function deriveFields<D>(schema: Schema<any>, derive: (doc: D) => void): void {
  derivations.set(schema, [...(derivations.get(schema) ?? []), derive]);
  schema.pre("validate", function () {
    derive(this as D);
  });
}

/** A named record's sort_name, from its name. */
function deriveSortName(doc: { name?: unknown; sort_name?: unknown }): void {
  doc.sort_name = String(doc.name).toLowerCase();
}

/** What every named tenant record has: an integer id, its account, a name and an identifier unique per account. */
export interface NamedRecord {
  _id: number;
  account_id: number;
  name: string;
  /** Lower-cased name: case-insensitive sorting and search without collation support in the database. */
  sort_name: string;
  identifier: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Schema of a named tenant record (agents, teams, tools, traits, knowledge sources): the shared fields, the
 * per-account unique identifier, list indexes, sort_name derived from name on every save and update, and
 * free-form fields (lib/free-json) decoded on every read.
 */
export function namedRecordSchema<T extends NamedRecord>(
  fields: SchemaDefinition,
  options: { hidden?: string[]; sortable?: readonly string[] } & Pick<SchemaOptions, "collection" | "minimize"> = {},
): Schema<T> {
  const { hidden = [], sortable = [], ...schemaOptions } = options;
  // Built untyped, then typed once: mongoose's generics cannot follow a schema assembled from parts.
  const schema = new Schema(
    {
      _id: { type: Number, required: true },
      account_id: { type: Number, required: true },
      name: { type: String, required: true },
      sort_name: { type: String, required: true },
      identifier: { type: String, required: true },
      description: { type: String, default: null },
      ...fields,
    },
    { ...recordSchemaOptions(["sort_name", ...hidden]), ...schemaOptions } as SchemaOptions,
  );
  schema.plugin(freeJsonFields);
  schema.index({ account_id: 1, identifier: 1 }, { unique: true });
  // Lists that clients sort by name or by last update, ties broken by _id: the index gives the whole order. Only the
  // orders a list offers are indexed (tools' list has one fixed order): every index is one more entry per write.
  if (sortable.includes("name")) schema.index({ account_id: 1, sort_name: 1, _id: 1 });
  if (sortable.includes("updated_at")) schema.index({ account_id: 1, updated_at: -1, _id: -1 });
  deriveFields(schema, deriveSortName);
  // Updates that rename ($set name) keep sort_name in step, whoever writes them.
  schema.pre(["updateOne", "updateMany", "findOneAndUpdate"], function () {
    const set = (this.getUpdate() as { $set?: Record<string, unknown> } | null)?.$set;
    if (typeof set?.name === "string") deriveSortName(set);
  });
  return schema as unknown as Schema<T>;
}

/** Indexes (0-based) of the inserts a bulk insert refused as duplicates; any other failure is rethrown. */
function duplicateIndexes(err: unknown): number[] {
  const list = writeErrorsOf(err);
  if (!list.length || list.some((e) => e.code !== 11000)) throw err;
  return list.map((e) => e.index);
}

/** Inserts records in one command; returns the indexes of those that already existed (by a unique key). */
export async function insertNew<D extends BsonDocument>(collection: Collection<D>, records: object[]): Promise<number[]> {
  if (!records.length) return [];
  try {
    await collection.insertMany(records as never[], { ordered: false });
    return [];
  } catch (err) {
    return duplicateIndexes(err);
  }
}

/**
 * model.create for one record, returned as a lean read returns it (render it with leanToJSON). Mongoose casts the
 * fields and fills in the defaults by building the document; the stored record is that document's BSON with the
 * schema's timestamps and derived fields. Mongoose's validators run only where they can fail a create whose params
 * passed their rules: on a value mongoose could not cast, or a required value missing (a caller's bug). Validating,
 * timestamping and rendering through the document were an eighth of a create's CPU (docs/adr/0062-creates-without-documents.md).
 * The record is inserted together with the creates of the same collection that arrived while an insert was on its
 * way (group commit, docs/adr/0050-write-path-speed.md, fourth pass). A create refused by a unique index fails alone,
 * with the duplicate-key error (code 11000) of a single insert; any other failure of the insert fails each create in it.
 */
export async function createRecord<T>(model: Model<T>, fields: object): Promise<T> {
  const doc = new model(fields);
  for (const derive of derivations.get(model.schema) ?? []) derive(doc);
  const record = model.applyTimestamps(doc.toBSON() as Json) as Json;
  if (doc.errors || model.schema.requiredPaths().some((path) => record[path] == null || record[path] === "")) await doc.validate();
  const refused = await insertGrouped(model.collection)(record);
  if (refused) throw refused;
  return decodeFreeJsonFields(model.schema, record) as T;
}

/** Per collection, the group commit of createRecord's inserts: each insert's own write error, or undefined. */
const groupedInserts = new WeakMap<Collection, (doc: BsonDocument) => Promise<MongoServerError | undefined>>();
function insertGrouped(collection: Collection) {
  let insert = groupedInserts.get(collection);
  if (!insert) {
    insert = groupCommit(async (docs: BsonDocument[]) => {
      try {
        await collection.insertMany(docs, { ordered: false });
        return docs.map(() => undefined);
      } catch (err) {
        const list = writeErrorsOf(err);
        if (!list.length) throw err;
        const refused = docs.map((): MongoServerError | undefined => undefined);
        for (const { index, code, errmsg } of list) refused[index] = new MongoServerError({ code, errmsg: errmsg ?? "write refused" });
        return refused;
      }
    });
    groupedInserts.set(collection, insert);
  }
  return insert;
}
