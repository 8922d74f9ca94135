/*
 * Readers of one environment setting each, used only by lib/config.ts (and lib/search/config.ts) to build the
 * configuration tree. A value that is not usable stops the process at start instead of running with NaN or a
 * silently replaced value.
 */

/** The variables a configuration is read from (process.env in production, a plain object in tests). */
export type Env = Record<string, string | undefined>;

/** A number setting: unset or empty gives the fallback; outside [min, max] (or not an integer) is refused. */
export function numberEnv(env: Env, name: string, fallback: number, { min = -Infinity, max = Infinity, integer = false } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    const kind = integer ? "an integer" : "a number";
    const range = max < Infinity ? ` from ${min} to ${max}` : min > -Infinity ? ` of at least ${min}` : "";
    throw new Error(`${name} must be ${kind}${range}, got "${raw}"`);
  }
  return value;
}

/** A positive integer setting (counts, intervals in ms). */
export const positiveIntEnv = (env: Env, name: string, fallback: number) => numberEnv(env, name, fallback, { min: 1, integer: true });

/** A text setting; unset gives the fallback (set to empty stays empty). */
export function textEnv(env: Env, name: string, fallback: string): string {
  return env[name] ?? fallback;
}

/** One of a fixed set of values; unset or empty gives the fallback. */
export function oneOfEnv<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!values.includes(raw as T)) throw new Error(`${name} must be one of ${values.join(", ")}, got "${raw}"`);
  return raw as T;
}

/** A comma-separated list setting, trimmed, without empty entries; `fallback` when it names nothing. */
export function listEnv(env: Env, name: string, fallback: string[] = []): string[] {
  const list = (env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return list.length ? list : fallback;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "5s,5m,30m,2h" as milliseconds (unset or empty: the fallback); each entry needs a unit (ms, s, m, h, d) so nobody guesses which one. */
export function durationsEnv(env: Env, name: string, fallback: string): number[] {
  return (env[name] || fallback).split(",").map((entry) => {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(entry);
    if (!match) throw new Error(`${name}: "${entry.trim()}" is not a duration such as 500ms, 5s, 5m, 2h or 1d`);
    return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
  });
}
