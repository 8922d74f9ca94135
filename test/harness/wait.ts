/**
 * Polls `fn` until `ok` holds for its value and returns that value; after `timeoutMs` it fails, naming `what` and
 * the last value seen. For effects that happen in the background (loads, deliveries, replicas joining).
 */
export async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met in ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
