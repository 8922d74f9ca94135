import { dateValue, metadataElements, metadataValue } from "../filters";

/** Documents (by number) holding one value: most values are one document's (urls, titles), so one number is kept bare. */
type Docs = number | Set<number>;

function addDoc<K>(map: Map<K, Docs>, key: K, doc: number) {
  const docs = map.get(key);
  if (docs === undefined) map.set(key, doc);
  else if (typeof docs === "number") {
    if (docs !== doc) map.set(key, new Set([docs, doc]));
  } else docs.add(doc);
}

function removeDoc<K>(map: Map<K, Docs>, key: K, doc: number) {
  const docs = map.get(key);
  if (docs === doc) map.delete(key);
  else if (typeof docs === "object") {
    docs.delete(doc);
    if (!docs.size) map.delete(key);
  }
}

/** Sets `mask[doc]` to `to` for each document. */
export function markDocs(mask: Uint8Array, docs: Docs | undefined, to = 1) {
  if (docs === undefined) return;
  if (typeof docs === "number") mask[docs] = to;
  else for (const doc of docs) mask[doc] = to;
}

/** The key under which a scalar is equal only to itself (lib/search/filters.ts: same JSON type and ===). */
export const equalityKey = (v: unknown) => `${typeof v}:${String(v)}`;

/**
 * One metadata name's values across a partition's documents: which documents have it at all, which hold each
 * scalar, each number and each date (strings that read as dates, in ms), so a comparison touches the documents it
 * selects instead of every document's metadata.
 */
export class NameIndex {
  readonly present = new Set<number>();
  readonly equal = new Map<string, Docs>();
  readonly numbers = new Map<number, Docs>();
  readonly dates = new Map<number, Docs>();

  add(doc: number, value: unknown) {
    if (this.file(value, (map, key) => addDoc(map, key, doc))) this.present.add(doc);
  }

  remove(doc: number, value: unknown) {
    if (this.file(value, (map, key) => removeDoc(map, key, doc))) this.present.delete(doc);
  }

  /** Calls `at` with each map and key a value is filed under (by equality, as a number, as a date); false for no value. */
  private file(value: unknown, at: <K>(map: Map<K, Docs>, key: K) => void): boolean {
    const values = metadataElements(value);
    for (const v of values) {
      if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") continue;
      at(this.equal, equalityKey(v));
      if (typeof v === "number") at(this.numbers, v);
      const ms = dateValue(v);
      if (ms !== undefined) at(this.dates, ms);
    }
    return values.length > 0;
  }
}

/**
 * The metadata names filters have asked about, each indexed over the partition's documents from the first filter
 * on it (names never filtered on, urls and titles mostly, cost nothing) and kept current as metadata changes.
 */
export class MetadataIndex {
  private readonly names = new Map<string, NameIndex>();

  /** `documents` lists every live document by number with its metadata (for a name's first index). */
  constructor(private readonly documents: () => Iterable<[number, Record<string, unknown> | null]>) {}

  /** A document's metadata changes from `before` to `after` (null: a new document, or one that goes). */
  change(doc: number, before: Record<string, unknown> | null, after: Record<string, unknown> | null) {
    // The names the document has (before or after), not every name filtered on: a change costs its own metadata.
    for (const name of new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])) {
      const index = this.names.get(name);
      if (!index) continue;
      const [b, a] = [metadataValue(before, name), metadataValue(after, name)];
      if (b === a) continue;
      index.remove(doc, b);
      index.add(doc, a);
    }
  }

  name(name: string): NameIndex {
    let index = this.names.get(name);
    if (!index) {
      index = new NameIndex();
      for (const [doc, metadata] of this.documents()) index.add(doc, metadataValue(metadata, name));
      this.names.set(name, index);
    }
    return index;
  }
}
