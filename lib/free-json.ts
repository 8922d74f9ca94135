import mongoose, { type MongooseQueryMiddleware, type Schema, type SchemaTypeOptions } from "mongoose";
import { clipChars } from "./text";

/**
 * Free-form JSON: values clients send whole and read back whole (tool and agent configuration, task input and
 * result, entity attributes, schedule templates, team push documents), which nothing queries inside.
 *
 * Stored as one JSON string per field (decoded on every read, hydrated or lean), so any JSON round-trips
 * exactly on every store: keys with `.` or a leading `$`, empty keys, nested arrays and any depth, which
 * MongoDB field names (and FerretDB v1 in every backend) cannot hold. The params rule below keeps what a
 * client may send within a documented contract: at most MAX_JSON_DEPTH levels, no NUL in keys, no "__proto__" key.
 */

/** Levels of objects and arrays a free-form value may nest (`{"rows": [[1]]}` has 3). */
export const MAX_JSON_DEPTH = 64;
/** Levels a whole request body may nest: the free-form limit plus room for the fields around it. */
export const MAX_BODY_DEPTH = 100;

/** What makes a JSON value unacceptable: where (the keys leading to it) and why. */
export interface JsonProblem {
  path: (string | number)[];
  type: "jsonDepth" | "jsonKey";
  message: string;
}

/** Longest path shown in a message: keys may be long, and a too-deep path is as long as the limit. */
const SHOWN_PATH_LENGTH = 200;
const identifierKey = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `a.b[0]["x.y"]`: where inside a value a problem is, as readable text. */
export function describeJsonPath(path: (string | number)[]): string {
  const text = path
    .map((key, i) => (typeof key === "number" ? `[${key}]` : identifierKey.test(key) ? (i ? `.${key}` : key) : `[${JSON.stringify(key)}]`))
    .join("");
  return text.length > SHOWN_PATH_LENGTH ? `${clipChars(text, SHOWN_PATH_LENGTH)}...` : text;
}

/**
 * The first problem of a JSON value, or null: nesting deeper than `maxDepth`, or (unless `keys` is false) a key
 * containing NUL or a "__proto__" key (assignment, as in mongoose's update cloning, turns it into a prototype
 * instead of keeping it; Fastify refuses it too). Walks with an explicit stack, so a body nested 100,000 levels
 * deep is measured, not a stack overflow.
 */
export function jsonProblem(value: unknown, { maxDepth = MAX_JSON_DEPTH, keys = true } = {}): JsonProblem | null {
  // Each node links to its parent, so the path is built only for a problem: every request body is walked.
  type Node = { value: unknown; depth: number; key?: string | number; parent?: Node };
  const pathOf = (node: Node, last?: string): (string | number)[] => {
    const path: (string | number)[] = last === undefined ? [] : [last];
    for (let n: Node | undefined = node; n?.parent; n = n.parent) path.unshift(n.key!);
    return path;
  };
  const stack: Node[] = [{ value, depth: 0 }];
  while (stack.length) {
    const node = stack.pop()!;
    if (node.value === null || typeof node.value !== "object") continue;
    if (node.depth >= maxDepth) {
      return { path: pathOf(node), type: "jsonDepth", message: `Nested deeper than ${maxDepth} levels of objects and arrays` };
    }
    if (Array.isArray(node.value)) {
      node.value.forEach((child, i) => stack.push({ value: child, depth: node.depth + 1, key: i, parent: node }));
      continue;
    }
    for (const [key, child] of Object.entries(node.value)) {
      if (keys && key.includes("\0")) {
        return { path: pathOf(node, key), type: "jsonKey", message: "Keys must not contain the NUL character (\\u0000)" };
      }
      if (keys && key === "__proto__") {
        return { path: pathOf(node, key), type: "jsonKey", message: 'Keys must not be "__proto__"' };
      }
      stack.push({ value: child, depth: node.depth + 1, key, parent: node });
    }
  }
  return null;
}

/** A problem as one line: what, and where when not at the top. */
export function jsonProblemMessage(problem: JsonProblem): string {
  return problem.path.length ? `${problem.message} (at ${describeJsonPath(problem.path)})` : problem.message;
}

/** Where a fastest-validator `custom` checker (new signature, as moleculer configures it) reports problems. */
export type FreeJsonErrors = { type: string; message: string }[];

/** The `custom` checker of free-form fields: reports a JsonProblem on the field. */
function checkFreeJson(value: unknown, errors: FreeJsonErrors): unknown {
  const problem = jsonProblem(value);
  if (problem) errors.push({ type: problem.type, message: jsonProblemMessage(problem) });
  return value;
}

type Checker = (value: unknown, errors: FreeJsonErrors) => unknown;

/**
 * The params rule of a free-form field: the given rule (its type, optional, props of any structured part) plus
 * the free-form contract, then any field-specific `checks`. Every free-form param uses it, so nothing reaches a
 * store that the contract refuses. A fastest-validator instance compiling it must have
 * `useNewCustomCheckerFunction: true` (moleculer's has).
 */
export function freeJsonRule<R extends object>(rule: R, ...checks: Checker[]): R & { custom: Checker[] } {
  return { ...rule, custom: [checkFreeJson, ...checks] };
}

/** The stored form: a JSON string; null and undefined stay themselves (a nullable field reads null). */
export function encodeFreeJson(value: unknown): unknown {
  return value === null || value === undefined ? value : JSON.stringify(value);
}

/** The value back from its stored form. Raw values written before this encoding (lean reads) pass through unchanged. */
export function decodeFreeJson(stored: unknown): unknown {
  return typeof stored === "string" ? JSON.parse(stored) : stored;
}

/** Mongoose schema type of free-form fields: encodes whatever is set (documents, creates, `$set` updates), decodes on get. */
class FreeJson extends mongoose.SchemaType {
  static schemaName = "FreeJson";

  constructor(path: string, options?: SchemaTypeOptions<unknown>) {
    super(path, options, "FreeJson");
    this.get(decodeFreeJson);
  }

  /**
   * `init` is a value read from the database, kept in its stored form and decoded by the getter; a decoded value
   * there (a lean record hydrated, or a raw object written before this encoding) is encoded, so the document
   * holds one form only. Outside init, whatever is set is a client value, strings included.
   */
  override cast(value: unknown, _doc?: unknown, init?: boolean): unknown {
    return init && typeof value === "string" ? value : encodeFreeJson(value);
  }
}
(mongoose.Schema.Types as unknown as Record<string, unknown>).FreeJson = FreeJson;

/** A free-form field of a schema; `default` is given decoded (e.g. `() => ({})`). Add `freeJsonFields` to the schema. */
export function freeJson(options: { default?: unknown; required?: boolean } = {}): SchemaTypeOptions<any> {
  return { type: FreeJson, ...options } as SchemaTypeOptions<any>;
}

const LEAN_READS: MongooseQueryMiddleware[] = ["find", "findOne", "findOneAndUpdate", "findOneAndReplace", "findOneAndDelete"];

const freeJsonPaths = new WeakMap<Schema<any>, string[]>();
/** The schema's top-level free-form fields. */
function freeJsonPathsOf(schema: Schema<any>): string[] {
  let paths = freeJsonPaths.get(schema);
  if (!paths) freeJsonPaths.set(schema, (paths = Object.entries(schema.paths).flatMap(([path, type]) => (type instanceof FreeJson ? [path] : []))));
  return paths;
}

/** A stored record of the schema as lean reads return it: its free-form fields decoded (in place). */
export function decodeFreeJsonFields<R>(schema: Schema<any>, record: R): R {
  if (record && typeof record === "object") {
    for (const field of freeJsonPathsOf(schema)) if (field in record) (record as Record<string, unknown>)[field] = decodeFreeJson((record as Record<string, unknown>)[field]);
  }
  return record;
}

/**
 * Schema plugin every schema with free-form fields uses: `toJSON`/`toObject` apply the decoding getters (not
 * virtuals), and lean reads (`find().lean()`, lean cursors, `findOneAndUpdate().lean()`) return decoded values.
 */
export function freeJsonFields(schema: Schema<any>): void {
  if (!freeJsonPathsOf(schema).length) return;
  for (const option of ["toJSON", "toObject"] as const) schema.set(option, { ...schema.get(option), getters: true, virtuals: false } as never);
  const decodeRecord = (record: unknown) => decodeFreeJsonFields(schema, record);
  schema.pre(LEAN_READS, function (this: mongoose.Query<unknown, unknown>) {
    // A transform, not a post hook: it also runs on each record a lean cursor yields.
    if (this.mongooseOptions().lean) this.transform((res: unknown) => (Array.isArray(res) ? res.map(decodeRecord) : decodeRecord(res)));
  });
}
