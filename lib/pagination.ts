import { ERRORS } from "./errors";

/** Limits the interface sets for each kind of list. */
export interface PageLimits {
  max?: number;
  def: number;
}

/** The largest skip any list accepts. */
export const MAX_SKIP = 1_000_000_000;

/** fastest-validator params for skip/limit; query strings are converted to integers. */
export function paginationParams({ max, def }: PageLimits) {
  return {
    // Bounded so a huge skip is a 422, not a 500 from the database's 64-bit conversion.
    skip: { type: "number", integer: true, min: 0, max: MAX_SKIP, default: 0, convert: true, optional: true, description: "How many records to skip" },
    limit: { type: "number", integer: true, min: 1, ...(max ? { max } : {}), default: def, convert: true, optional: true, description: "How many records to return at most" },
  };
}

const startRule = { type: "number", integer: true, min: 0, max: MAX_SKIP, convert: true, optional: true } as const;

/**
 * skip and offset, for the listings whose start the interface names both ways (the account's documents: skip in its
 * table, offset on its reference page; a source's documents: offset). Read with pageStart.
 */
export const pageStartParams = {
  skip: { ...startRule, description: "How many records to skip (the same as offset; default 0)" },
  offset: { ...startRule, description: "How many records to skip (the same as skip; default 0)" },
};

/** Where a listing with pageStartParams starts: skip or offset (both given, they must agree), else 0. */
export function pageStart({ skip, offset }: { skip?: number; offset?: number }): number {
  if (skip !== undefined && offset !== undefined && skip !== offset) {
    throw ERRORS.validation([{ field: "offset", location: "query", type: "conflict", message: `skip (${skip}) and offset (${offset}) name the same start: give one, or both equal` }]);
  }
  return skip ?? offset ?? 0;
}

/** fastest-validator params for sort_by/sort_order with the interface's defaults. */
export function sortParams(fields: readonly string[], defaultField = "updated_at") {
  return {
    sort_by: { type: "enum", values: [...fields], default: defaultField, optional: true, description: "Field to sort by (name sorts case-insensitively)" },
    sort_order: { type: "enum", values: ["asc", "desc"], default: "desc", optional: true, description: "Sort direction" },
  };
}

/** Mongo sort spec from validated sort params, with _id as a stable tie-breaker. */
export function toSort(sortBy: string, sortOrder: "asc" | "desc"): Record<string, 1 | -1> {
  const dir = sortOrder === "asc" ? 1 : -1;
  return { [sortBy]: dir, _id: dir };
}

/** Sort of a named-record list (lib/db namedRecordSchema): "name" sorts case-insensitively by sort_name. */
export function namedSort(sortBy: string, sortOrder: "asc" | "desc"): Record<string, 1 | -1> {
  return toSort(sortBy === "name" ? "sort_name" : sortBy, sortOrder);
}

export interface Page<T> {
  data: T[];
  pagination: { total: number; skip: number; limit: number; has_more: boolean };
}

/** The paginated response shape used by every list the interface marks as paginated. */
export function toPage<T>(data: T[], total: number, skip: number, limit: number): Page<T> {
  return { data, pagination: { total, skip, limit, has_more: skip + data.length < total } };
}
