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

/** A comma-separated list setting, trimmed, without empty entries. */
export function listEnv(name: string): string[] {
  return (process.env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
