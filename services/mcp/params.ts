import * as z from "zod/v4";
import { COMPARISON_OPS, COMPOUND_OPS } from "../../lib/search/filters";

/** A fastest-validator rule, as the services declare their params (lib/resource Rule). */
type Rule = { readonly type: string; readonly [key: string]: unknown };

/** The zod type of one rule; the rule kinds the REST params of the retrieval tools use, nothing more. */
function zodOfRule(rule: Rule): z.ZodType {
  const { min, max } = rule as { min?: number; max?: number };
  switch (rule.type) {
    case "string": {
      let s = z.string();
      if (min !== undefined) s = s.min(min);
      if (max !== undefined) s = s.max(max);
      if (typeof rule.pattern === "string") s = s.regex(new RegExp(rule.pattern));
      return s;
    }
    case "number": {
      let n = rule.integer ? z.int() : z.number();
      const floor = rule.positive ? Math.max(min ?? 1, rule.integer ? 1 : Number.MIN_VALUE) : min;
      if (floor !== undefined) n = n.min(floor);
      if (max !== undefined) n = n.max(max);
      return n;
    }
    case "enum":
      return z.enum(rule.values as [string, ...string[]]);
    case "boolean":
      return z.boolean();
    case "array": {
      let a = z.array(zodOfRule(rule.items as Rule));
      if (min !== undefined) a = a.min(min);
      if (max !== undefined) a = a.max(max);
      return a;
    }
    default:
      throw new Error(`No MCP input schema for a "${rule.type}" param`);
  }
}

/**
 * A tool's input schema from the REST action's own params: the same bounds, enums and defaults, so a tool
 * cannot drift from its route. The action validates the arguments again when the tool calls it. `own` gives the
 * type of a param no rule kind describes (a recursive grammar checked by its own function).
 */
export function zodShape(params: Record<string, Rule>, own: Record<string, z.ZodType> = {}): Record<string, z.ZodType> {
  return Object.fromEntries(
    Object.entries(params).map(([name, rule]) => {
      let type: z.ZodType = own[name] ?? zodOfRule(rule);
      if (rule.default !== undefined) type = type.default(rule.default as never);
      else if (rule.optional) type = type.optional();
      if (typeof rule.description === "string") type = type.describe(rule.description);
      return [name, type];
    }),
  );
}

const filterScalar = z.union([z.string(), z.number(), z.boolean()]);

/**
 * The metadata filter grammar of the search routes (lib/search/filters.ts): its shape only; the action's
 * filterProblems checks keys, values and limits, and its 422 reaches the client as the tool's error.
 */
export const searchFilterSchema: z.ZodType = z.lazy(() =>
  z.union([
    z.object({ type: z.enum(COMPARISON_OPS), key: z.string(), value: z.union([filterScalar, z.array(filterScalar)]) }),
    z.object({ type: z.enum(COMPOUND_OPS), filters: z.array(searchFilterSchema).min(1) }),
  ]),
);
