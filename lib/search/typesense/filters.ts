/**
 * Metadata filters (lib/search/filters.ts) as Typesense 0.24 `filter_by` (docs/adr/0058-metadata-filters.md).
 *
 * Free-form metadata is indexed per key and value type under wildcard schema fields (METADATA_FIELDS):
 * `meta_s_<name>` strings, `meta_n_<name>` numbers (for ranges) and `meta_ns_<name>` the same numbers as strings
 * (for eq / ne / in / nin: 0.24.1 refuses != on numeric fields, and strings of doubles compare exactly where
 * `float` does not), `meta_b_<name>` booleans, `meta_d_<name>` dates (epoch ms, from strings that read as dates),
 * all arrays, plus `meta_keys`: the names the chunk has a value for. Strings (`meta_s_`, `meta_ns_`, `meta_keys`)
 * are stored and compared as exactToken: Typesense matches a string field by its words, ignoring case and symbols,
 * so "New" would match "New York" and "new", and "-3" match "3". ne / nin test
 * `meta_keys` too, so they match only chunks that have the key (the predicate's semantics), whatever Typesense
 * does with a negation on a missing field. Built-in keys are the chunk document's own fields. Chunk and vector
 * documents both carry these fields (TypesenseEngine), so every sub-search of a query applies the filter itself.
 */
import { createHash } from "node:crypto";
import { comparedValue, dateValue, filterValues, metadataElements, METADATA_KEY_PATTERN, METADATA_PREFIX, type ComparisonFilter, type FilterScalar, type SearchFilter } from "../filters";

/** The schema fields metadata needs (Typesense matches the names as regular expressions). */
export const METADATA_FIELDS = [
  { name: "meta_keys", type: "string[]", optional: true },
  { name: "meta_s_.*", type: "string[]", optional: true },
  { name: "meta_n_.*", type: "float[]", optional: true },
  { name: "meta_ns_.*", type: "string[]", optional: true },
  { name: "meta_b_.*", type: "bool[]", optional: true },
  { name: "meta_d_.*", type: "int64[]", optional: true },
] as const;

/** A document's metadata fields as stored: `meta_keys` and `meta_<type>_<name>`. */
export type MetadataFields = { [field: `meta_${string}`]: unknown[] };

/**
 * A string as one word of hexadecimal digits, the same for the same string only: what an exact comparison needs
 * from a field Typesense splits into words, lower-cased and without symbols (and whose words match up to 100
 * characters).
 */
export function exactToken(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 32);
}

/**
 * A document's metadata as the fields above. Names a filter cannot address (free-form metadata may hold dotted or
 * long keys, ADR 0055) are left out: they would only widen the schema.
 */
export function metadataFields(metadata: Record<string, unknown> | null | undefined): MetadataFields {
  const out: MetadataFields = {};
  const add = (field: `meta_${string}`, v: unknown) => (out[field] ??= []).push(v);
  for (const [name, raw] of Object.entries(metadata ?? {})) {
    if (!METADATA_KEY_PATTERN.test(name)) continue;
    const values = metadataElements(raw);
    if (!values.length) continue;
    add("meta_keys", exactToken(name));
    for (const v of values) {
      if (typeof v === "string") {
        add(`meta_s_${name}`, exactToken(v));
        const ms = dateValue(v);
        if (ms !== undefined) add(`meta_d_${name}`, ms);
      } else if (typeof v === "number" && Number.isFinite(v)) {
        add(`meta_n_${name}`, v);
        add(`meta_ns_${name}`, exactToken(String(v)));
      } else if (typeof v === "boolean") add(`meta_b_${name}`, v);
    }
  }
  return out;
}

/** The metadata fields of a stored document (to copy them onto another document of the same chunk). */
export function storedMetadataFields(doc: object): MetadataFields {
  return Object.fromEntries(Object.entries(doc).filter(([field]) => field.startsWith("meta_"))) as MetadataFields;
}

/**
 * A Typesense `update` that gives a stored document new metadata: every metadata field it has set to null, which
 * 0.24.1 takes as "remove the field" (an update keeps the fields it is not sent), then the new ones.
 */
export function metadataUpdate(stored: object, metadata: Record<string, unknown> | null | undefined): Record<string, unknown[] | null> {
  const update: Record<string, unknown[] | null> = Object.fromEntries(Object.keys(storedMetadataFields(stored)).map((field) => [field, null]));
  return { ...update, ...metadataFields(metadata) };
}

/** A string in filter_by (validation refuses backticks in values). */
const backticked = (s: string) => `\`${s}\``;
/** A metadata value in filter_by: booleans bare, strings and numbers' strings as their exactToken. */
const quoted = (v: FilterScalar) => (typeof v === "boolean" ? String(v) : backticked(exactToken(String(v))));
/** The field a value is compared for equality in: numbers in their string form (0.24.1 has no != on numeric fields). */
const equalityField = (name: string, v: FilterScalar) => `meta_${typeof v === "string" ? "s" : typeof v === "number" ? "ns" : "b"}_${name}`;
const RANGE = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;
/** Matches no document: no metadata name has a dot. */
const NOTHING = "meta_keys:=`.`";

/** Values grouped by the field they are looked up in. */
function byField(name: string, values: FilterScalar[]): [string, FilterScalar[]][] {
  const groups = new Map<string, FilterScalar[]>();
  for (const v of values) {
    const field = equalityField(name, v);
    groups.set(field, [...(groups.get(field) ?? []), v]);
  }
  return [...groups];
}

const any = (parts: string[]) => (parts.length === 0 ? NOTHING : parts.length === 1 ? parts[0]! : `(${parts.join(" || ")})`);
const all = (parts: string[]) => (parts.length === 1 ? parts[0]! : `(${parts.join(" && ")})`);

function comparison(f: ComparisonFilter, has: (field: string) => boolean): string {
  const { key, type: op } = f;
  const values = filterValues(f).map((v) => comparedValue(key, v));
  if (!key.startsWith(METADATA_PREFIX)) {
    const literal = (v: FilterScalar) => (typeof v === "string" ? backticked(v) : String(v));
    switch (op) {
      case "eq":
      case "in":
        return `${key}:=[${values.map(literal).join(",")}]`;
      case "ne":
      case "nin":
        // Numeric built-ins (source_id, indexed_at) hold one value: not equal is below or above.
        return all(values.map((v) => (typeof v === "number" ? `(${key}:<${v} || ${key}:>${v})` : `${key}:!=${literal(v)}`)));
      default:
        return `${key}:${RANGE[op]}${values[0]}`;
    }
  }
  const name = key.slice(METADATA_PREFIX.length);
  switch (op) {
    case "eq":
    case "in":
      return any(byField(name, values).filter(([field]) => has(field)).map(([field, vs]) => `${field}:=[${vs.map(quoted).join(",")}]`));
    case "ne":
    case "nin": {
      // A field no document has holds none of the values: its != is true.
      const differs = values.flatMap((v) => (has(equalityField(name, v)) ? [`${equalityField(name, v)}:!=${quoted(v)}`] : []));
      return all([`meta_keys:=${quoted(name)}`, ...differs]);
    }
    default: {
      const v = values[0]!;
      const [field, bound] = typeof v === "number" ? [`meta_n_${name}`, v] : [`meta_d_${name}`, dateValue(v)];
      return has(field) ? `${field}:${RANGE[op]}${bound}` : NOTHING;
    }
  }
}

/**
 * A validated filter as a `filter_by` expression (to be joined to the tenant scope with &&), for a collection
 * whose fields `has` tells: 0.24.1 refuses a filter on a wildcard field no document of the collection has
 * created yet (404 "Could not find a filter field"), so a comparison on one is decided here (false; true for
 * a != in ne / nin).
 */
export function filterBy(filter: SearchFilter, has: (field: string) => boolean = () => true): string {
  if (filter.type === "and" || filter.type === "or") {
    const parts = filter.filters.map((f) => filterBy(f, has));
    return filter.type === "and" ? all(parts) : any(parts);
  }
  return comparison(filter as ComparisonFilter, has);
}
