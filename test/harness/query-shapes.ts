import mongoose from "mongoose";
import { EVENT_INDEXES } from "../../lib/events";

/**
 * Query shapes the services issue, captured through mongoose's debug hook, and the check that a declared index
 * serves each one on a real MongoDB: the index's first key is bounded by the filter (an equality, $in or range),
 * and a sort is read in index order (its keys, minus those the filter fixes, follow the index's equality prefix).
 */

type Json = Record<string, unknown>;
type IndexKeys = [string, 1 | -1][];

/** A declared index: its keys, and whether it is unique. */
export interface DeclaredIndex {
  keys: IndexKeys;
  unique: boolean;
}

/** How a filter constrains one field. */
type Bound = "eq" | "range" | "other";

/** One query as issued: collection, operation, which fields it bounds and how, and its sort. */
export interface QueryShape {
  collection: string;
  operation: string;
  fields: Record<string, Bound>;
  sort: IndexKeys;
}

const RANGE_OPERATORS = new Set(["$gt", "$gte", "$lt", "$lte"]);
/** Operations whose first argument is a filter; the value names the argument holding options with a sort. */
const FILTER_OPERATIONS: Record<string, number | null> = {
  find: 1, findOne: 1, findOneAndUpdate: 2, findOneAndDelete: 1, findOneAndReplace: 2,
  countDocuments: null, updateOne: null, updateMany: null, deleteOne: null, deleteMany: null, replaceOne: null,
};
const BULK_OPERATIONS = ["updateOne", "updateMany", "deleteOne", "deleteMany", "replaceOne"];

function bound(value: unknown): Bound {
  if (value === null || typeof value !== "object" || value instanceof Date || Array.isArray(value) || !Object.keys(value).every((k) => k.startsWith("$"))) return "eq";
  const ops = Object.keys(value);
  if (ops.some((op) => op === "$eq" || op === "$in")) return "eq";
  return ops.every((op) => RANGE_OPERATORS.has(op)) ? "range" : "other";
}

/** The shapes of a filter: one per $or branch (each must be served), $and branches merged. */
function filterShapes(filter: Json): Record<string, Bound>[] {
  let shapes: Record<string, Bound>[] = [{}];
  for (const [key, value] of Object.entries(filter ?? {})) {
    if (key === "$and") {
      for (const part of value as Json[]) shapes = shapes.flatMap((s) => filterShapes(part).map((p) => ({ ...s, ...p })));
    } else if (key === "$or") {
      shapes = shapes.flatMap((s) => (value as Json[]).flatMap((branch) => filterShapes(branch).map((b) => ({ ...s, ...b }))));
    } else if (!key.startsWith("$")) {
      for (const s of shapes) s[key] = bound(value);
    }
  }
  return shapes;
}

const sortKeys = (sort: unknown): IndexKeys => Object.entries((sort ?? {}) as Json).map(([k, v]) => [k, Number(v) < 0 ? -1 : 1]);

/** The query shapes of one call as mongoose's debug hook reports it. */
export function shapesOf(collection: string, operation: string, args: unknown[]): QueryShape[] {
  const shapes = (filter: Json, sort: IndexKeys = []) => filterShapes(filter).map((fields) => ({ collection, operation, fields, sort }));
  if (operation in FILTER_OPERATIONS) {
    const optionsAt = FILTER_OPERATIONS[operation];
    return shapes(args[0] as Json, optionsAt === null ? [] : sortKeys((args[optionsAt] as Json | undefined)?.sort));
  }
  if (operation === "distinct") return shapes(args[1] as Json);
  if (operation === "aggregate") {
    const [first, second] = args[0] as Json[];
    if (!first?.$match) return shapes({});
    return shapes(first.$match as Json, second?.$sort ? sortKeys(second.$sort) : []);
  }
  if (operation === "bulkWrite") {
    return (args[0] as Json[]).flatMap((op) => {
      const [name, body] = Object.entries(op)[0] as [string, Json];
      return BULK_OPERATIONS.includes(name) ? shapes(body.filter as Json).map((s) => ({ ...s, operation: `bulkWrite.${name}` })) : [];
    });
  }
  return [];
}

/** Whether `declared` serves `shape` (see the module comment). */
export function served(shape: QueryShape, declared: DeclaredIndex): boolean {
  const index = declared.keys;
  // A lookup on every key of a unique index (_id included) reads at most one document, whatever its sort.
  if (declared.unique && index.every(([key]) => shape.fields[key] === "eq")) return true;
  const [first] = index;
  if (!first || !["eq", "range"].includes(shape.fields[first[0]] ?? "")) return false;
  if (!shape.sort.length) return true;
  let equalities = 0;
  while (equalities < index.length && shape.fields[index[equalities]![0]] === "eq") equalities++;
  const sort = shape.sort.filter(([key]) => shape.fields[key] !== "eq");
  const rest = index.slice(equalities, equalities + sort.length);
  if (rest.length < sort.length || rest.some(([key], i) => key !== sort[i]![0])) return sort.length === 0;
  const direction = rest[0]![1] * sort[0]![1];
  return rest.every(([, dir], i) => dir * sort[i]![1] === direction);
}

/** Every declared index of every model on the process's connections, by collection (the _id index included). */
export function declaredIndexes(): Map<string, DeclaredIndex[]> {
  const byCollection = new Map<string, DeclaredIndex[]>();
  for (const conn of mongoose.connections) {
    for (const model of Object.values(conn.models)) {
      const indexes = model.schema.indexes().map(([keys, options]) => ({ keys: sortKeys(keys), unique: Boolean(options?.unique) }));
      byCollection.set(model.collection.collectionName, [ID_INDEX, ...indexes]);
    }
  }
  // The event log is written through the driver, with its indexes declared in lib/events.ts.
  for (const [collection, indexes] of Object.entries(EVENT_INDEXES)) {
    byCollection.set(collection, [ID_INDEX, ...indexes.map((keys) => ({ keys: sortKeys(keys), unique: false }))]);
  }
  return byCollection;
}

/** The index every collection has. */
export const ID_INDEX: DeclaredIndex = { keys: [["_id", 1]], unique: true };

/** A readable key for a shape, e.g. `tasks find {account_id: eq, status: eq} sort {created_at: -1, _id: -1}`. */
export function describeShape(shape: QueryShape): string {
  const fields = Object.entries(shape.fields).map(([k, b]) => `${k}: ${b}`).join(", ");
  const sort = shape.sort.length ? ` sort {${shape.sort.map(([k, d]) => `${k}: ${d}`).join(", ")}}` : "";
  return `${shape.collection} ${shape.operation} {${fields}}${sort}`;
}

/** A `find` as issued, to replay under EXPLAIN. */
export interface CapturedFind {
  collection: string;
  filter: Json;
  sort: Json;
  limit?: number;
}

/**
 * Starts capturing every query this process's mongoose connections issue; returns what was captured so far:
 * the shapes, and the last `find` of each shape.
 */
export function captureQueryShapes(): { shapes: () => QueryShape[]; finds: () => CapturedFind[]; stop: () => void } {
  const captured: QueryShape[] = [];
  const finds = new Map<string, CapturedFind>();
  mongoose.set("debug", (collection: string, operation: string, ...args: unknown[]) => {
    const shapes = shapesOf(collection, operation, args);
    captured.push(...shapes);
    if (operation === "find" && shapes.length === 1) {
      const options = (args[1] ?? {}) as { sort?: Json; limit?: number };
      finds.set(describeShape(shapes[0]!), { collection, filter: args[0] as Json, sort: options.sort ?? {}, limit: options.limit });
    }
  });
  return { shapes: () => captured, finds: () => [...finds.values()], stop: () => void mongoose.set("debug", false) };
}

/**
 * The local server's SQLite plan of a find (EXPLAIN QUERY PLAN, each line's detail), or undefined on a real MongoDB,
 * whose explain has no such plan and whose planner races the candidate plans.
 */
export async function localPlan(db: mongoose.mongo.Db, find: { collection: string; filter: object; sort?: object; limit?: number }): Promise<string[] | undefined> {
  const { collection, filter, sort, limit } = find;
  const explained = await db.command({ explain: { find: collection, filter, ...(sort ? { sort } : {}), ...(limit ? { limit } : {}) }, verbosity: "queryPlanner" });
  return (explained.queryPlanner?.Plan as string[] | undefined)?.map((line) => line.replace(/^.*detail=/, ""));
}
