/**
 * How much slower than a quiet machine a run may be: TEST_TIME_SCALE, or 3 (a laptop or shared CI runner at load
 * 5-15 ran this suite that much slower). Every deadline of a wait or a test is multiplied by it: deadlines only
 * bound a failure, a passing test takes what it takes. jest.config.js applies the same factor to testTimeout.
 */
export const TIME_SCALE = Number(process.env.TEST_TIME_SCALE) || 3;

/** A deadline of `ms` on a quiet machine, scaled for this run. */
export const scaled = (ms: number): number => ms * TIME_SCALE;

/**
 * Polls `fn` until `ok` holds for its value and returns that value; after `timeoutMs` (scaled) it fails, naming
 * `what` and the last value seen. For effects that happen in the background (loads, deliveries, replicas joining).
 */
export async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    const value = await fn();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met in ${scaled(timeoutMs)} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
