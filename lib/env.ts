/**
 * Reads a numeric setting from the environment: unset or empty gives the fallback; anything that is not a
 * number in range stops the process at start instead of running with NaN or a silently replaced value.
 */
export function numberEnv(name: string, fallback: number, { min = -Infinity, integer = false } = {}): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    const kind = integer ? "an integer" : "a number";
    throw new Error(`${name} must be ${kind}${min > -Infinity ? ` of at least ${min}` : ""}, got "${raw}"`);
  }
  return value;
}

/** A positive integer setting (counts, intervals in ms), refusing garbage like numberEnv. */
export const positiveIntEnv = (name: string, fallback: number) => numberEnv(name, fallback, { min: 1, integer: true });

/** A comma-separated list setting, trimmed, without empty entries; `fallback` when it names nothing. */
export function listEnv(name: string, fallback: string[] = []): string[] {
  const list = (process.env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return list.length ? list : fallback;
}
