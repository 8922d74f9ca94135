import type { Middleware } from "moleculer";

/** The parts of an action schema other nodes read from the registry (the gateway's routes and OpenAPI document). */
const DESCRIBED = ["params", "response", "body"] as const;

/**
 * Moleculer sends a node's action schemas to the other nodes in its INFO packet through a replacer that drops
 * every object it has already met anywhere in the packet, not only cycles (moleculer's utils.safetyObject): a
 * rule object shared by two fields or two actions (agents' `refList` on traits, tools and knowledge_sources, the
 * Pagination schema of every list) reached the gateway as nothing, so the OpenAPI document of a cluster lost
 * those fields. Each action gets its own copy of those trees before it is registered, so no object is met twice.
 */
export function distinctSchemas(): Middleware {
  return {
    name: "DistinctSchemas",
    serviceCreating(_service: unknown, schema: { actions?: Record<string, unknown> }) {
      for (const action of Object.values(schema.actions ?? {})) {
        if (!action || typeof action !== "object") continue;
        const described = action as Record<string, unknown>;
        for (const key of DESCRIBED) if (described[key] !== undefined) described[key] = copyTree(described[key]);
      }
    },
  };
}

/** A copy of the plain objects and arrays of a tree; anything else (functions, RegExps) is kept as it is. */
export function copyTree<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyTree) as T;
  if (value !== null && typeof value === "object" && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, copyTree(inner)])) as T;
  }
  return value;
}
