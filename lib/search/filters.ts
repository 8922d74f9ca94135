/**
 * Metadata filters for search, in the shape of OpenAI's vector-store file search (docs/adr/0058-metadata-filters.md):
 * a comparison `{type: eq|ne|gt|gte|lt|lte|in|nin, key, value}` or a compound `{type: and|or, filters: [...]}`.
 *
 * Pure: the grammar, a validator that lists every problem in the params validator's shape (FieldProblem, so a bad
 * filter answers 422 like any other bad parameter), a predicate over a chunk's filterable fields (the embedded
 * engine's candidate test and the contract tests' brute force), and the Typesense `filter_by` translation.
 *
 * Keys: `source_id` (integer), `document_id` (string), `indexed_at` (a date: ISO 8601 string or epoch milliseconds),
 * and `metadata.<name>` for a document's metadata (what loaders record: source, url, title, last_modified; and an
 * uploaded document's own attributes). Bare names other than the three built-in keys are refused, so a
 * metadata key can never be mistaken for (or shadow) a built-in one.
 *
 * Semantics: a comparison on a key the chunk does not have (missing or null) is false, for every operator; ne and
 * nin match chunks that have the key with no equal value (a value of another type is never equal). An array metadata value matches eq/in when any element does, ne/nin when none does. Ranges compare numbers with
 * numbers and dates with dates (a metadata string that reads as an ISO 8601 or HTTP date); strings never compare
 * by order.
 */
import type { FieldProblem } from "../errors";
import { charCount } from "../text";
import { isoDate } from "../iso-date";

export const COMPARISON_OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"] as const;
export const COMPOUND_OPS = ["and", "or"] as const;
export type ComparisonOp = (typeof COMPARISON_OPS)[number];
export type CompoundOp = (typeof COMPOUND_OPS)[number];

export type FilterScalar = string | number | boolean;
export interface ComparisonFilter {
  type: ComparisonOp;
  key: string;
  value: FilterScalar | FilterScalar[];
}
export interface CompoundFilter {
  type: CompoundOp;
  filters: SearchFilter[];
}
export type SearchFilter = ComparisonFilter | CompoundFilter;

/** Nesting of compound filters: a comparison at depth 1 is a bare comparison; and/or of comparisons is depth 2. */
export const MAX_FILTER_DEPTH = 4;
/** Comparisons in one filter, across all levels. */
export const MAX_FILTER_CLAUSES = 32;
/** Values of one in/nin. */
export const MAX_FILTER_VALUES = 100;
export const MAX_FILTER_STRING = 256;
/** A metadata key's name after `metadata.`. */
export const METADATA_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const METADATA_PREFIX = "metadata.";

export const BUILTIN_FILTER_KEYS = ["source_id", "document_id", "indexed_at"] as const;
type BuiltinKey = (typeof BUILTIN_FILTER_KEYS)[number];

/** What a filter reads of a chunk. */
export interface FilterableChunk {
  sourceId: number;
  documentId: string;
  /** Milliseconds since the epoch. */
  indexedAt: number;
  metadata?: Record<string, unknown> | null;
}

const RANGE_OPS = new Set<ComparisonOp>(["gt", "gte", "lt", "lte"]);
const LIST_OPS = new Set<ComparisonOp>(["in", "nin"]);
/** RFC 7231 IMF-fixdate, as Last-Modified headers carry it. */
const HTTP_DATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** Milliseconds of a string that reads as a date (ISO 8601, lib/iso-date.ts, or HTTP date), else undefined. */
export function dateValue(v: unknown): number | undefined {
  if (typeof v !== "string") return undefined;
  const ms = HTTP_DATE.test(v) ? Date.parse(v) : isoDate(v).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is FilterScalar =>
  typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v));

function keyProblem(key: unknown): string | undefined {
  if (typeof key !== "string") return "key must be a string";
  if ((BUILTIN_FILTER_KEYS as readonly string[]).includes(key)) return undefined;
  if (key.startsWith(METADATA_PREFIX)) {
    return METADATA_KEY_PATTERN.test(key.slice(METADATA_PREFIX.length))
      ? undefined
      : `metadata key '${key}' must be 'metadata.' followed by 1 to 64 letters, digits, '_' or '-'`;
  }
  return `unknown filter key '${key}': use ${BUILTIN_FILTER_KEYS.join(", ")} or metadata.<name>`;
}

/** Problem with one value for `op` on `key`, if any. */
function valueProblem(op: ComparisonOp, key: string, v: unknown): string | undefined {
  if (!isScalar(v)) return "value must be a string, a finite number or a boolean";
  if (typeof v === "string" && charCount(v) > MAX_FILTER_STRING) return `string values must be at most ${MAX_FILTER_STRING} characters`;
  // Typesense quotes filter strings in backticks and 0.24 has no escape for one inside.
  if (typeof v === "string" && v.includes("`")) return "string values must not contain '`'";
  const range = RANGE_OPS.has(op);
  if (key === "source_id") return Number.isInteger(v) && (v as number) > 0 ? undefined : "source_id values must be positive integers";
  if (key === "document_id") {
    if (range) return `${op} does not apply to document_id`;
    return typeof v === "string" ? undefined : "document_id values must be strings";
  }
  if (key === "indexed_at") {
    return (typeof v === "number" && Number.isInteger(v)) || dateValue(v) !== undefined
      ? undefined
      : "indexed_at values must be ISO 8601 dates or epoch milliseconds";
  }
  if (range && !(typeof v === "number" || dateValue(v) !== undefined)) return `${op} compares numbers or ISO 8601 dates`;
  return undefined;
}

/**
 * Every problem of a filter, in the params validator's shape; `field` names the parameter (filters, filters.filters[0].key).
 * Empty when the filter is valid.
 */
export function filterProblems(filter: unknown, field = "filters"): FieldProblem[] {
  const problems: FieldProblem[] = [];
  let clauses = 0;
  const problem = (f: string, message: string, type = "filter") => problems.push({ field: f, message, type });
  const walk = (node: unknown, at: string, depth: number) => {
    if (!isObject(node)) return problem(at, `${at} must be an object`, "object");
    if (depth > MAX_FILTER_DEPTH) return problem(at, `filters nest at most ${MAX_FILTER_DEPTH} levels deep`, "filterDepth");
    const type = node.type;
    if ((COMPOUND_OPS as readonly unknown[]).includes(type)) {
      for (const k of Object.keys(node)) if (k !== "type" && k !== "filters") problem(`${at}.${k}`, `unknown field '${k}' in a ${String(type)} filter`, "objectStrict");
      const subs = node.filters;
      if (!Array.isArray(subs) || subs.length === 0) return problem(`${at}.filters`, `${at}.filters must be a non-empty array`, "array");
      subs.forEach((s, i) => walk(s, `${at}.filters[${i}]`, depth + 1));
      return;
    }
    if (!(COMPARISON_OPS as readonly unknown[]).includes(type)) {
      return problem(`${at}.type`, `unknown filter type '${String(type)}': use ${[...COMPARISON_OPS, ...COMPOUND_OPS].join(", ")}`, "enumValue");
    }
    const op = type as ComparisonOp;
    clauses++;
    for (const k of Object.keys(node)) if (k !== "type" && k !== "key" && k !== "value") problem(`${at}.${k}`, `unknown field '${k}' in a ${op} filter`, "objectStrict");
    const badKey = keyProblem(node.key);
    if (badKey) problem(`${at}.key`, badKey);
    const key = String(node.key);
    const value = node.value;
    if (LIST_OPS.has(op)) {
      if (!Array.isArray(value) || value.length === 0 || value.length > MAX_FILTER_VALUES) {
        return problem(`${at}.value`, `${op} takes an array of 1 to ${MAX_FILTER_VALUES} values`, "array");
      }
      if (badKey) return;
      value.forEach((v, i) => {
        const bad = valueProblem(op, key, v);
        if (bad) problem(`${at}.value[${i}]`, bad);
      });
      return;
    }
    if (value === undefined) return problem(`${at}.value`, `${op} needs a value`, "required");
    if (badKey) return;
    const bad = Array.isArray(value) ? `${op} takes one value, not an array (use in / nin)` : valueProblem(op, key, value);
    if (bad) problem(`${at}.value`, bad);
  };
  walk(filter, field, 1);
  if (clauses > MAX_FILTER_CLAUSES) problem(field, `a filter holds at most ${MAX_FILTER_CLAUSES} comparisons (this one has ${clauses})`, "filterClauses");
  return problems;
}

/**
 * A metadata name's value: own keys only, so a name such as `constructor` or `toString` is missing from a document
 * that lacks it rather than found on Object.prototype.
 */
export function metadataValue(metadata: Record<string, unknown> | null | undefined, name: string): unknown {
  return metadata && Object.hasOwn(metadata, name) ? metadata[name] : undefined;
}

/** Whether a filter compares any metadata key (anywhere in it). */
export function readsMetadata(filter: SearchFilter): boolean {
  return "filters" in filter ? filter.filters.some(readsMetadata) : filter.key.startsWith(METADATA_PREFIX);
}

/** What filters compare of a metadata value: its elements (an array's, else itself), missing and null left out. */
export function metadataElements(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value.filter((x) => x !== undefined && x !== null) : [value];
}

/** The chunk's value(s) for a key: built-in keys give one, metadata keys one or several (arrays), missing gives none. */
function valuesOf(chunk: FilterableChunk, key: string): unknown[] {
  switch (key as BuiltinKey) {
    case "source_id":
      return [chunk.sourceId];
    case "document_id":
      return [chunk.documentId];
    case "indexed_at":
      return [chunk.indexedAt];
  }
  return metadataElements(metadataValue(chunk.metadata, key.slice(METADATA_PREFIX.length)));
}

/** A comparison's values: a list's, or its one value. */
export function filterValues(filter: ComparisonFilter): FilterScalar[] {
  return Array.isArray(filter.value) ? filter.value : [filter.value as FilterScalar];
}

/** A filter value as it compares on this key: indexed_at dates as epoch ms, anything else as given. */
export function comparedValue(key: string, v: FilterScalar): FilterScalar {
  if (key === "indexed_at" && typeof v === "string") return dateValue(v)!;
  return v;
}

/** The range comparisons: whether an ordering (-1, 0, 1) of a value against the bound passes. */
export const RANGE_TESTS: Partial<Record<ComparisonFilter["type"], (order: number) => boolean>> = {
  gt: (o) => o > 0,
  gte: (o) => o >= 0,
  lt: (o) => o < 0,
  lte: (o) => o <= 0,
};

function equal(a: unknown, b: FilterScalar): boolean {
  return typeof a === typeof b && a === b;
}

/** -1/0/1 ordering of a chunk value against a range bound, or undefined when they do not compare. */
function order(a: unknown, bound: FilterScalar, key: string): number | undefined {
  if (typeof bound === "number") {
    if (typeof a !== "number") return undefined;
    return Math.sign(a - bound);
  }
  const b = key === "indexed_at" ? undefined : dateValue(bound);
  if (b === undefined) return undefined;
  const ms = dateValue(a);
  return ms === undefined ? undefined : Math.sign(ms - b);
}

/** A validated filter as a predicate over chunks. */
export function compileFilter(filter: SearchFilter): (chunk: FilterableChunk) => boolean {
  if (filter.type === "and" || filter.type === "or") {
    const subs = filter.filters.map(compileFilter);
    return filter.type === "and" ? (c) => subs.every((s) => s(c)) : (c) => subs.some((s) => s(c));
  }
  const cmp = filter as ComparisonFilter;
  const { key, type: op } = cmp;
  if (LIST_OPS.has(op)) {
    const wanted = filterValues(cmp).map((v) => comparedValue(key, v));
    const hit = (vals: unknown[]) => vals.some((a) => wanted.some((w) => equal(a, w)));
    return op === "in" ? (c) => hit(valuesOf(c, key)) : (c) => { const vals = valuesOf(c, key); return vals.length > 0 && !hit(vals); };
  }
  const value = comparedValue(key, cmp.value as FilterScalar);
  switch (op) {
    case "eq":
      return (c) => valuesOf(c, key).some((a) => equal(a, value));
    case "ne":
      return (c) => { const vals = valuesOf(c, key); return vals.length > 0 && !vals.some((a) => equal(a, value)); };
    default: {
      const test = RANGE_TESTS[op]!;
      return (c) => valuesOf(c, key).some((a) => { const o = order(a, value, key); return o !== undefined && test(o); });
    }
  }
}

/** Whether a chunk matches a validated filter. */
export function matches(filter: SearchFilter, chunk: FilterableChunk): boolean {
  return compileFilter(filter)(chunk);
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const scalarSchema = { anyOf: [{ type: "string", maxLength: MAX_FILTER_STRING }, { type: "number" }, { type: "boolean" }] };

/** The grammar as named OpenAPI schemas (recursive: a compound holds filters); the limits beyond it are checked by filterProblems. */
export const FILTER_SCHEMAS = {
  SearchFilter: {
    anyOf: [ref("ComparisonFilter"), ref("CompoundFilter")],
    description:
      `A metadata filter, applied before ranking: a comparison or an and/or of filters (at most ${MAX_FILTER_DEPTH} levels, ${MAX_FILTER_CLAUSES} comparisons). ` +
      "A comparison on a key the chunk does not have is false, for ne and nin too.",
  },
  ComparisonFilter: {
    type: "object",
    required: ["type", "key", "value"],
    properties: {
      type: { enum: [...COMPARISON_OPS], description: "eq, ne, gt, gte, lt, lte (numbers or ISO 8601 dates), in, nin (a list of values)" },
      key: {
        type: "string",
        description: `${BUILTIN_FILTER_KEYS.join(", ")}, or metadata.<name> for a document metadata key (1-64 letters, digits, '_' or '-')`,
      },
      value: { anyOf: [...scalarSchema.anyOf, { type: "array", minItems: 1, maxItems: MAX_FILTER_VALUES, items: scalarSchema }] },
    },
    additionalProperties: false,
  },
  CompoundFilter: {
    type: "object",
    required: ["type", "filters"],
    properties: {
      type: { enum: [...COMPOUND_OPS] },
      filters: { type: "array", minItems: 1, items: ref("SearchFilter") },
    },
    additionalProperties: false,
  },
};
