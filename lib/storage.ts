import { Schema, type Connection, type IndexOptions, type Model, type SchemaDefinition, type SchemaDefinitionProperty } from "mongoose";
import { deriveFields, namedRecordSchema, recordSchemaOptions, type NamedRecord } from "./db";
import { freeJson, freeJsonFields } from "./free-json";
import type { Rule } from "./resource";

/**
 * How a field is stored, declared beside its write and read rules (lib/resource.ts), so one declaration gives the
 * mongoose schema, the record's TypeScript type and, for fields that declare no rule of their own, how responses
 * show it (docs/adr/0051-fields-declare-storage.md). After @moleculer/database's `fields` (`default`, `hidden`)
 * and Medusa's `model.define`.
 */
export interface Store<T = unknown, Optional extends boolean = boolean> {
  /** The mongoose path, as a hand-written schema would declare it. */
  readonly definition: SchemaDefinitionProperty;
  /** How responses show the value when the field declares neither a read nor a write rule. */
  readonly rule: Rule;
  /** A stored record may lack the field (no default, not required). */
  readonly optional: Optional;
  /** The collection the stored id refers to (a reference), for readers of the declaration; nothing enforces it. */
  readonly ref?: string;
  /** The value's type (type-level only). */
  readonly value: T;
}

/** What a field may say about its storage besides its type. */
interface Options {
  readonly default?: unknown;
  readonly required?: boolean | ((this: any) => boolean);
  readonly index?: boolean;
  readonly unique?: boolean;
  readonly sparse?: boolean;
  /** The collection a stored id refers to. */
  readonly ref?: string;
}
type Nullable<O> = O extends { default: null } ? null : never;
type IsOptional<O> = O extends { default: unknown } ? false : O extends { required: true } ? false : true;
type Scalar<T, O> = Store<T | Nullable<O>, IsOptional<O>>;

function store(type: unknown, rule: Rule, options: Options = {}): Store<any, any> {
  const { ref, ...mongoose } = options;
  return {
    definition: { type, ...mongoose } as SchemaDefinitionProperty,
    rule: options.default === null ? { ...rule, nullable: true } : rule,
    optional: options.default === undefined && options.required !== true,
    ...(ref ? { ref } : {}),
    value: undefined as never,
  };
}

/** A free-form value (lib/free-json: stored as JSON text, read back whole): null by default, a given default, or required. */
// Without a type argument the value is a JSON object (the first two); `json<T>` names its type. (One generic
// signature with a default type would take its type from where the result goes instead.)
function json(options: { default: null }): Store<Record<string, unknown> | null, false>;
function json(options: { default: () => object } | { required: true }): Store<Record<string, unknown>, false>;
function json<T>(options: { default: null }): Store<T | null, false>;
function json<T>(options: { default: () => NoInfer<T> } | { required: true }): Store<T, false>;
function json(options: { default?: unknown; required?: boolean }): Store<unknown, false> {
  return { ...store(undefined, { type: "object" }, options), definition: freeJson(options) };
}

/** The storage declarations of fields: `stored.string({ default: null })` is a nullable string column. */
export const stored = {
  /**
   * A string; `enum` restricts (and types) its values; `values` types and shows them without a check (the writer
   * keeps to them; with `enum`, the values a record holds once written, e.g. a data type once resolved).
   */
  string: <const O extends Options & { enum?: readonly string[]; values?: readonly string[] }>(
    options?: O,
  ): Scalar<O extends { values: readonly (infer V)[] } ? V : O extends { enum: readonly (infer V)[] } ? V : string, O> => {
    const { values, ...rest } = (options ?? {}) as Options & { enum?: readonly string[]; values?: readonly string[] };
    const shown = values ?? rest.enum;
    return store(String, shown ? { type: "enum", values: shown } : { type: "string" }, rest);
  },
  /** An integer (an id when `ref` names what it refers to). */
  int: <const O extends Options>(options?: O): Scalar<number, O> => store(Number, { type: "number", integer: true }, options),
  number: <const O extends Options>(options?: O): Scalar<number, O> => store(Number, { type: "number" }, options),
  boolean: <const O extends Options>(options?: O): Scalar<boolean, O> => store(Boolean, { type: "boolean" }, options),
  date: <const O extends Options>(options?: O): Scalar<Date, O> => store(Date, { type: "date" }, options),
  /** A list of strings, empty by default. */
  strings: <const O extends Options & { enum?: readonly string[] }>(options?: O): Store<(O extends { enum: readonly (infer V)[] } ? V : string)[], false> => {
    const { enum: values, ...rest } = options ?? {};
    const item = values ? { type: "enum", values } : { type: "string" };
    return store(values ? [{ type: String, enum: values }] : [String], { type: "array", items: item }, { ...rest, default: [] });
  },
  /** A list of integers (ids of `ref`), empty by default. */
  ints: <const O extends Options>(options?: O): Store<number[], false> =>
    store([Number], { type: "array", items: { type: "number", integer: true } }, { ...options, default: [] }),
  /** A free-form value (lib/free-json: stored as JSON text, read back whole); `default` is given decoded. */
  json,
  /** A sub-document of stored fields (no _id of its own). */
  object: <const N extends Readonly<Record<string, Store>>, const O extends Options>(fields: N, options?: O): Scalar<{ [K in keyof N]: N[K]["value"] }, O> => {
    const definitions = Object.fromEntries(Object.entries(fields).map(([key, f]) => [key, f.definition]));
    const props = Object.fromEntries(Object.entries(fields).map(([key, f]) => [key, f.rule]));
    return store(new Schema(definitions as SchemaDefinition, { _id: false }), { type: "object", props }, options);
  },
  /** Anything else, as its mongoose path (e.g. a list of sub-documents); `T` is the value's type. */
  custom: <T, const O extends boolean = false>(definition: SchemaDefinitionProperty, rule: Rule = { type: "object" }, optional?: O): Store<T, O> =>
    ({ definition, rule, optional: (optional ?? false) as O, value: undefined as never }),
};

/** A field declaration as far as storage is concerned (lib/resource FieldDecl). */
interface StoredField {
  readonly store?: Store;
  readonly read?: Rule | false;
}
type StoreOf<D> = D extends { store: infer S } ? S : never;
type ValueOf<S> = S extends Store<infer T> ? T : never;
type Present<F> = { -readonly [K in keyof F as [StoreOf<F[K]>] extends [never] ? never : StoreOf<F[K]> extends Store<any, false> ? K : never]: ValueOf<StoreOf<F[K]>> };
type Absent<F> = { -readonly [K in keyof F as [StoreOf<F[K]>] extends [never] ? never : StoreOf<F[K]> extends Store<any, true> ? K : never]?: ValueOf<StoreOf<F[K]>> };
/** What every stored record has. */
export interface BaseRecord {
  _id: number;
  account_id: number;
  created_at: Date;
  updated_at: Date;
}
/** A stored record of the declared fields (the record type, inferred: no hand-written interface). */
export type RecordOf<F, Base = BaseRecord> = Base & Present<F> & Absent<F>;
/** What a model's records have besides their declared fields. */
type BaseOf<O> = O extends { named: true }
  ? NamedRecord
  : O extends { plain: true }
    ? unknown
    : O extends { keyed: true }
      ? { created_at: Date; updated_at: Date }
      : BaseRecord;

/** How the model of declared fields is built, besides the fields. */
export interface ModelOptions {
  /** The mongoose model name ("Agent"). */
  name: string;
  /** A named record (lib/db namedRecordSchema): name, identifier unique per account, description, their indexes. */
  named?: boolean;
  /** The orders clients may choose for a named record's list (lib/resource `list.sortable`): each by name or last update is indexed. */
  sortable?: readonly string[];
  /** The fields declare every stored path, `_id` and `account_id` included (e.g. a queue keyed by a string id). */
  keyed?: boolean;
  /** Keyed, and none of the records' shared options: no timestamps, no JSON shape (bookkeeping: counters, registries). */
  plain?: boolean;
  /** The collection, where it is not mongoose's plural of the name. */
  collection?: string;
  /** Keep empty objects (free-form values that are `{}`). */
  minimize?: false;
  /** Indexes over several fields (single-field ones are `index`/`unique` in the field's store). */
  indexes?: readonly (readonly [Record<string, 1 | -1>, IndexOptions?])[];
  /** Stored fields in the order records hold them, where it differs from the declaration's (the response's) order. */
  order?: readonly string[];
  /** A stored field shown under the name of a field the record lacks (lib/db recordSchemaOptions). */
  standIns?: Record<string, string>;
  /** Fields derived from a record's others, on every save and create (lib/db deriveFields); given the document. */
  derive?: (doc: any) => void;
  /** Other settings of the schema (e.g. its JSON shape). */
  setup?: (schema: Schema<any>) => void;
}

/** The mongoose schema and model of declared fields: stored fields in order, hidden ones (`read: false`) never serialised. */
export function defineModel<const F extends Readonly<Record<string, StoredField>>, const O extends ModelOptions>(fields: F, options: O) {
  type Record = RecordOf<F, BaseOf<O>>;
  const keys = options.order ?? Object.keys(fields).filter((key) => fields[key]!.store);
  const definitions: SchemaDefinition = {};
  for (const key of keys) definitions[key] = fields[key]!.store!.definition;
  const hidden = keys.filter((key) => fields[key]!.read === false);
  const { collection, minimize } = options;
  const schemaOptions = { ...(collection ? { collection } : {}), ...(minimize === false ? { minimize } : {}) };
  const schema: Schema<any> = options.named
    ? namedRecordSchema(definitions, { hidden, sortable: options.sortable, ...schemaOptions })
    : options.plain
      ? new Schema(definitions, { ...schemaOptions, versionKey: false })
      : new Schema(
          options.keyed ? definitions : { _id: { type: Number, required: true }, account_id: { type: Number, required: true }, ...definitions },
          { ...recordSchemaOptions(hidden, options.standIns), ...schemaOptions },
        );
  if (!options.named) schema.plugin(freeJsonFields);
  for (const [index, indexOptions] of options.indexes ?? []) schema.index(index, indexOptions);
  if (options.derive) deriveFields(schema, options.derive);
  options.setup?.(schema);
  return {
    schema: schema as unknown as Schema<Record>,
    /** The model on a given connection. */
    model: (db: Connection): Model<Record> => (db.models[options.name] as Model<Record>) ?? db.model<Record>(options.name, schema),
    /** The stored record's type (type-level only). */
    record: undefined as unknown as Record,
  };
}
