/** How the embedded engine applies a metadata filter (docs/adr/0058-metadata-filters.md): masks from the metadata index. */
import { comparedValue, dateValue, filterValues, METADATA_PREFIX, RANGE_TESTS, type ComparisonFilter, type SearchFilter } from "../filters";
import { equalityKey, markDocs } from "./metadata-index";
import type { Partition } from "./partition";

/** Whether a filter compares `key` anywhere in it. */
function reads(filter: SearchFilter, key: string): boolean {
  return "filters" in filter ? filter.filters.some((f) => reads(f, key)) : filter.key === key;
}

/** Documents a comparison on source_id, document_id or a metadata name selects, marked by number. */
function documentMask(p: Partition, leaf: ComparisonFilter): Uint8Array {
  const mask = new Uint8Array(p.byNumber.length);
  const values = filterValues(leaf);
  const range = RANGE_TESTS[leaf.type];
  const negated = leaf.type === "ne" || leaf.type === "nin";
  if (leaf.key === "source_id" || leaf.key === "document_id") {
    const wanted = new Set<unknown>(values);
    const bound = values[0] as number;
    for (const doc of p.byNumber) {
      if (!doc) continue;
      const v = leaf.key === "source_id" ? doc.sourceId : doc.id;
      if (range ? range(Math.sign((v as number) - bound)) : wanted.has(v) !== negated) mask[doc.number] = 1;
    }
    return mask;
  }
  const name = p.metadata.name(leaf.key.slice(METADATA_PREFIX.length));
  if (range) {
    const bound = values[0]!;
    const [index, at] = typeof bound === "number" ? [name.numbers, bound] : [name.dates, dateValue(bound)];
    if (at === undefined) return mask;
    for (const [x, docs] of index) if (range(Math.sign(x - at))) markDocs(mask, docs);
    return mask;
  }
  if (negated) for (const doc of name.present) mask[doc] = 1;
  for (const v of values) markDocs(mask, name.equal.get(equalityKey(v)), negated ? 0 : 1);
  return mask;
}

/** Slots a comparison on indexed_at selects. */
function indexedAtMask(p: Partition, leaf: ComparisonFilter): Uint8Array {
  const mask = new Uint8Array(p.chunks.length);
  const values = filterValues(leaf).map((v) => comparedValue("indexed_at", v) as number);
  const range = RANGE_TESTS[leaf.type];
  const negated = leaf.type === "ne" || leaf.type === "nin";
  for (let slot = 0; slot < p.chunks.length; slot++) {
    const at = p.chunks[slot]?.indexedAt;
    if (at === undefined) continue;
    if (range ? range(Math.sign(at - values[0]!)) : values.includes(at) !== negated) mask[slot] = 1;
  }
  return mask;
}

/** A filter's selection: documents by number, or slots when it compares indexed_at (a chunk's own). */
function evaluate(p: Partition, filter: SearchFilter, perSlot: boolean): Uint8Array {
  if ("filters" in filter) {
    const [first, ...rest] = filter.filters.map((f) => evaluate(p, f, perSlot));
    for (const m of rest) for (let i = 0; i < first!.length; i++) first![i] = filter.type === "and" ? first![i]! & m[i]! : first![i]! | m[i]!;
    return first!;
  }
  if (filter.key === "indexed_at") return indexedAtMask(p, filter);
  const docs = documentMask(p, filter);
  if (!perSlot) return docs;
  const slots = new Uint8Array(p.chunks.length);
  const docOf = p.docOf;
  for (let slot = 0; slot < p.chunks.length; slot++) if (docOf[slot]! >= 0 && docs[docOf[slot]!]) slots[slot] = 1;
  return slots;
}

/**
 * The slots a filtered query may rank (its sources and its filter), with the semantics of lib/search/filters.ts
 * `matches`: `accept` for the rankings, which then test one byte per candidate; `slots` listing them (undefined
 * when more than `limit`), so a selective filter's vector scan does not test every slot of the partition; and
 * whether any has a vector. Built once per query from the metadata index (a comparison marks the documents
 * holding the values it selects) and byte-wise and/or; a filter on indexed_at is evaluated per slot.
 */
export function filterScope(p: Partition, sources: Set<number> | undefined, filter: SearchFilter) {
  const perSlot = reads(filter, "indexed_at");
  const mask = evaluate(p, filter, perSlot);
  const chunks = p.chunks;
  // The query runs synchronously: the partition's slot table cannot grow under it.
  const docOf = p.docOf;
  const accept = perSlot
    ? (slot: number) => mask[slot] === 1 && (!sources || sources.has(chunks[slot]!.sourceId))
    : (slot: number) => mask[docOf[slot]!] === 1 && (!sources || sources.has(chunks[slot]!.sourceId));
  const slots = (limit: number): number[] | undefined => {
    const out: number[] = [];
    if (perSlot) {
      for (let slot = 0; slot < mask.length; slot++) if (mask[slot] && accept(slot) && out.push(slot) > limit) return undefined;
      return out;
    }
    // A marked document's chunks pass the mask; only the sources remain to test.
    for (let n = 0; n < mask.length; n++) {
      if (mask[n] !== 1) continue;
      const doc = p.byNumber[n];
      if (!doc) continue;
      for (const slot of doc.chunks) if ((!sources || sources.has(chunks[slot]!.sourceId)) && out.push(slot) > limit) return undefined;
    }
    return out;
  };
  const vectors = () => {
    if (perSlot) {
      for (let slot = 0; slot < mask.length; slot++) if (mask[slot] && p.vectors.has(slot) && accept(slot)) return true;
      return false;
    }
    for (let n = 0; n < mask.length; n++) {
      const doc = mask[n] ? p.byNumber[n] : undefined;
      if (doc) for (const slot of doc.chunks) if (p.vectors.has(slot) && accept(slot)) return true;
    }
    return false;
  };
  return { accept, slots, vectors };
}
