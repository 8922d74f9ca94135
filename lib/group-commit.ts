/**
 * Group commit (docs/adr/0050-write-path-speed.md): calls that arrive while a flush is in flight wait and go
 * together in the next flush, one round trip for all of them; a call when nothing is in flight is flushed at
 * once, so a lone caller waits for nothing. Each call gets its own entry of the flush's results; a flush that
 * throws fails every call in it (each caller then handles the failure as if its own write had failed).
 */
export function groupCommit<I, R>(flush: (items: I[]) => Promise<R[]>, maxBatch = 256): (item: I) => Promise<R> {
  let waiting: { item: I; resolve(result: R): void; reject(err: unknown): void }[] = [];
  let flushing = false;
  const drain = async () => {
    flushing = true;
    while (waiting.length) {
      const batch = waiting.slice(0, maxBatch);
      waiting = waiting.slice(batch.length);
      try {
        const results = await flush(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(results[i]!));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    flushing = false;
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!flushing) void drain();
    });
}

/** groupCommit per key (a sequence, a database connection): batches never mix keys; an idle key is forgotten. */
export function keyedGroupCommit<K, I, R>(flush: (key: K, items: I[]) => Promise<R[]>, maxBatch?: number): (key: K, item: I) => Promise<R> {
  const groups = new Map<K, { call: (item: I) => Promise<R>; pending: number }>();
  return async (key, item) => {
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { call: groupCommit((items: I[]) => flush(key, items), maxBatch), pending: 0 }));
    group.pending++;
    try {
      return await group.call(item);
    } finally {
      if (--group.pending === 0) groups.delete(key);
    }
  };
}

/** Results of a flush made of `batches` flattened (one per item, in order), cut back into one list per batch. */
export function perBatch<T>(batches: readonly unknown[][], flat: readonly T[]): T[][] {
  let first = 0;
  return batches.map((batch) => flat.slice(first, (first += batch.length)));
}
