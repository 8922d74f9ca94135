/**
 * Metadata filters (lib/search/filters.ts) as Typesense 0.24 `filter_by` (docs/adr/0058-metadata-filters.md).
 *
 * Free-form metadata is indexed per key and value type under wildcard schema fields (METADATA_FIELDS):
 * `meta_s_<name>` strings, `meta_n_<name>` numbers, `meta_b_<name>` booleans, `meta_d_<name>` dates (epoch ms, from
 * strings that read as dates), all arrays, plus `meta_keys`: the names the chunk has a value for. ne / nin test
 * `meta_keys` too, so they match only chunks that have the key (the predicate's semantics), whatever Typesense
 * does with a negation on a missing field. Built-in keys are the chunk document's own fields.
 *
 * Not wired into the engine yet: the chunks collection does not hold metadata (see the ADR for what is left).
 */
import { dateValue, METADATA_PREFIX, type ComparisonFilter, type FilterScalar, type SearchFilter } from "../filters";

/** The schema fields metadata needs (Typesense matches the names as regular expressions). */
export const METADATA_FIELDS = [
  { name: "meta_keys", type: "string[]", optional: true },
  { name: "meta_s_.*", type: "string[]", optional: true },
  { name: "meta_n_.*", type: "float[]", optional: true },
  { name: "meta_b_.*", type: "bool[]", optional: true },
  { name: "meta_d_.*", type: "int64[]", optional: true },
] as const;

/** A document's metadata as the fields above. */
export function metadataFields(metadata: Record<string, unknown> | null | undefined): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  const add = (field: string, v: unknown) => (out[field] ??= []).push(v);
  for (const [name, raw] of Object.entries(metadata ?? {})) {
    const values = (Array.isArray(raw) ? raw : [raw]).filter((v) => v !== undefined && v !== null);
    if (!values.length) continue;
    add("meta_keys", name);
    for (const v of values) {
      if (typeof v === "string") {
        add(`meta_s_${name}`, v);
        const ms = dateValue(v);
        if (ms !== undefined) add(`meta_d_${name}`, ms);
      } else if (typeof v === "number" && Number.isFinite(v)) add(`meta_n_${name}`, v);
      else if (typeof v === "boolean") add(`meta_b_${name}`, v);
    }
  }
  return out;
}

const literal = (v: FilterScalar) => (typeof v === "string" ? `\`${v}\`` : String(v));
const prefix = (t: "s" | "n" | "b") => `meta_${t}_`;
const typeLetter = (v: FilterScalar) => (typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b");
const RANGE = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/** Values grouped by the field they are looked up in. */
function byField(name: string, values: FilterScalar[]): [string, FilterScalar[]][] {
  const groups = new Map<string, FilterScalar[]>();
  for (const v of values) {
    const f = `${prefix(typeLetter(v))}${name}`;
    groups.set(f, [...(groups.get(f) ?? []), v]);
  }
  return [...groups];
}

const any = (parts: string[]) => (parts.length === 1 ? parts[0]! : `(${parts.join(" || ")})`);
const all = (parts: string[]) => (parts.length === 1 ? parts[0]! : `(${parts.join(" && ")})`);

function comparison(f: ComparisonFilter): string {
  const { key, type: op } = f;
  const values = (Array.isArray(f.value) ? f.value : [f.value]).map((v) => (key === "indexed_at" && typeof v === "string" ? dateValue(v)! : v));
  if (!key.startsWith(METADATA_PREFIX)) {
    switch (op) {
      case "eq":
      case "in":
        return `${key}:[${values.map(literal).join(",")}]`;
      case "ne":
      case "nin":
        return all(values.map((v) => `${key}:!=${literal(v)}`));
      default:
        return `${key}:${RANGE[op]}${values[0]}`;
    }
  }
  const name = key.slice(METADATA_PREFIX.length);
  const has = `meta_keys:=${literal(name)}`;
  switch (op) {
    case "eq":
    case "in":
      return any(byField(name, values).map(([field, vs]) => `${field}:[${vs.map(literal).join(",")}]`));
    case "ne":
    case "nin":
      return all([has, ...values.map((v) => `${prefix(typeLetter(v))}${name}:!=${literal(v)}`)]);
    default: {
      const v = values[0]!;
      return typeof v === "number" ? `meta_n_${name}:${RANGE[op]}${v}` : `meta_d_${name}:${RANGE[op]}${dateValue(v)}`;
    }
  }
}

/** A validated filter as a `filter_by` expression (to be joined to the tenant scope with &&). */
export function filterBy(filter: SearchFilter): string {
  if (filter.type === "and" || filter.type === "or") {
    const parts = filter.filters.map(filterBy);
    return filter.type === "and" ? all(parts) : any(parts);
  }
  return comparison(filter as ComparisonFilter);
}
