import type { RunningServer } from "./servers";

/** Stops what global setup started. */
export default async function globalTeardown() {
  const servers = (globalThis as { __servers?: RunningServer[] }).__servers ?? [];
  await Promise.all(servers.map((s) => s.stop()));
}
