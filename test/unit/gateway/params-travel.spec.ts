import type { ServiceSchema } from "moleculer";
import { SERVICE_REGISTRY } from "../../../services";

/** Paths to every RegExp under `value`: JSON, as the node info carries actions' params to other nodes, makes one {}. */
function regExpsIn(value: unknown, at: string, found: string[] = [], seen = new Set<unknown>()): string[] {
  if (value instanceof RegExp) found.push(at);
  else if (value && typeof value === "object" && !seen.has(value)) {
    seen.add(value);
    for (const [key, child] of Object.entries(value)) regExpsIn(child, `${at}.${key}`, found, seen);
  }
  return found;
}

/** Every action of a service schema, its mixins' included. */
function actionsOf(schema: ServiceSchema): [string, unknown][] {
  const own = Object.entries((schema.actions ?? {}) as Record<string, unknown>);
  return [...((schema.mixins ?? []) as ServiceSchema[]).flatMap(actionsOf), ...own];
}

describe("actions' params as other nodes receive them", () => {
  it("hold no RegExp: a gateway on another node would read it as {}, and document no pattern", () => {
    const found = Object.entries(SERVICE_REGISTRY).flatMap(([name, schema]) =>
      actionsOf(schema).flatMap(([action, def]) => regExpsIn((def as { params?: unknown })?.params, `${name}.${action}.params`)),
    );
    expect(found).toEqual([]);
  });
});
