import { numberEnv } from "../lib/env";

/** A positive integer setting of a bench run from the environment, refusing garbage. */
export const positiveIntEnv = (name: string, fallback: number) => numberEnv(name, fallback, { min: 1, integer: true });
