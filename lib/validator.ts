import { Validators } from "moleculer";
import { isoDate } from "./iso-date";
import { charCount } from "./text";

/** A field rule, or a `$$` schema option such as `$$async: true`. */
type Rule = string | boolean | { type?: string; optional?: boolean; nullable?: boolean; props?: Record<string, Rule>; [option: string]: unknown } | Rule[];
type Checker = ReturnType<InstanceType<typeof Validators.Fastest>["compile"]>;

/** Messages of every validator of the platform where fastest-validator's own mislead. */
export const PLATFORM_MESSAGES = {
  // The default shows the allowed values as if they were the value sent.
  enumValue: "The '{field}' field must be one of: {expected}.",
  stringEnum: "The '{field}' field must be one of: {expected}.",
  // The default names the object by its path, empty at the top of a document; the 422's loc says where.
  objectStrict: "Unknown fields: {actual}; this object takes {expected}.",
};

/** A fastest-validator rule compiler: it returns the source of a check, run with `value` in scope and the validator as `this`. */
type RuleCompiler = (this: unknown, rule: { schema: Record<string, unknown> }, path: string, context: unknown) => { sanitized?: boolean; source: string };

type RewrittenType = "string" | "number" | "date" | "boolean";

/** fastest-validator's own rule of a type (the package exports no path to it). */
function builtInRule(type: RewrittenType): RuleCompiler {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(`fastest-validator/lib/rules/${type}`) as RuleCompiler;
}

/** A built-in rule whose generated check has one statement replaced (by `to`, or what it gives for the schema), for the schemas `applies` picks. */
function rewrittenRule(
  type: RewrittenType,
  from: string,
  to: string | ((schema: Record<string, unknown>) => string),
  applies: (schema: Record<string, unknown>) => boolean,
): RuleCompiler {
  const builtIn = builtInRule(type);
  return function (this: unknown, rule, path, context) {
    const compiled = builtIn.call(this, rule, path, context);
    if (!applies(rule.schema)) return compiled;
    if (compiled.source.split(from).length !== 2) throw new Error(`fastest-validator's ${type} rule no longer has \`${from}\` once`);
    return { ...compiled, source: compiled.source.replace(from, typeof to === "string" ? to : to(rule.schema)) };
  };
}

/**
 * A number sent as text (a query string, a path segment, a converted field) in decimal notation, as JSON writes one;
 * NaN otherwise. Where the rule wants an integer, only an integer's digits, and only within what a double holds
 * exactly: "1e1", "12.0" or twenty digits would name an id the client did not write.
 */
export function decimalNumber(value: unknown, integer = false): number {
  if (typeof value !== "string") return NaN;
  if (!integer) return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(value) ? Number(value) : NaN;
  return /^[+-]?\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? Number(value) : NaN;
}

/**
 * The platform's string, number and date rules, installed in every fastest-validator instance (with the helpers their
 * checks call):
 * - a string's `min`, `max` and `length` count characters (code points, lib/text.ts) as JSON Schema and the
 *   interface count them, not UTF-16 units: 200 emoji fit a field of at most 200 characters;
 * - a number rule that converts (`convert: true`) takes text in decimal notation only: `Number()` also reads ""
 *   as 0, " 5" as 5, "0x10" as 16 and ["5"] as 5, so `?limit=0x10` or `/tools/%201` named a valid value; an
 *   integer rule takes digits only, within 2^53 (`/knowledge/1e1` was source 10);
 * - a boolean rule that converts reads its words in any case: Python's requests sends `?force=True`, and
 *   fastest-validator took only "true", "false", "on", "off", "1" and "0" in lower case;
 * - a date rule that converts takes ISO 8601 text only (`isoDate`, lib/iso-date.ts): fastest-validator read "1"
 *   and 1 as a millisecond after 1970, and handed anything else to Date's parser ("March 7" is a date in 2001, and
 *   a time without an offset is the server's local time).
 */
function platformRules(validator: { add(type: string, rule: unknown): void }) {
  validator.add("string", rewrittenRule("string", "var len = value.length;", "var len = this.charCount(value);", (s) => s.min != null || s.max != null || s.length != null));
  validator.add("number", rewrittenRule("number", "value = Number(value);", (s) => `value = this.decimalNumber(value, ${s.integer === true});`, (s) => s.convert === true));
  validator.add("date", rewrittenRule("date", "value = new Date(value.length && !isNaN(+value) ? +value : value);", "value = this.isoDate(value);", (s) => s.convert === true));
  validator.add("boolean", rewrittenRule("boolean", "var origValue = value;", 'var origValue = value; if (typeof value === "string") value = value.toLowerCase();', (s) => s.convert === true));
  Object.assign(validator, { charCount, decimalNumber, isoDate });
}

/**
 * Options of every fastest-validator instance of the platform; custom checkers take the new signature, as moleculer's
 * validator sets it (free-form rules rely on it).
 */
export const PLATFORM_VALIDATOR_OPTIONS = { useNewCustomCheckerFunction: true, messages: PLATFORM_MESSAGES, plugins: [platformRules] };

/**
 * fastest-validator accepts null in an optional field that is not nullable (it reads null as missing) but
 * leaves the null in the params. The platform's contract is the same reading everywhere: such a null is
 * "not given". So after a successful check those keys are removed, once here, and actions only ever see
 * null where a field declares `nullable`.
 */
export class PlatformValidator extends Validators.Fastest {
  constructor() {
    super(PLATFORM_VALIDATOR_OPTIONS);
  }

  override compile(schema: Record<string, Rule>): Checker {
    const check = super.compile(schema);
    const strip = schema.$$root ? undefined : nullStripper(schema);
    if (!strip) return check;
    // The result is true or a list of problems (the typings say boolean); `async` tells the middleware to await it.
    const stripped: Checker = (params, opts) => {
      const result = check(params, opts);
      if (check.async) return (result as Promise<boolean>).then((r) => (r === true && strip(params), r));
      if (result === true) strip(params);
      return result;
    };
    stripped.async = check.async;
    return stripped;
  }
}

/** Whether null in a field with this rule means "not given" (optional and not nullable). */
function nullMeansAbsent(rule: Rule): boolean {
  if (Array.isArray(rule)) return rule.every(nullMeansAbsent);
  if (typeof rule === "string") return /\boptional\b/.test(rule) && !/\bnullable\b/.test(rule);
  if (typeof rule !== "object") return false;
  return rule.optional === true && rule.nullable !== true;
}

function nestedProps(rule: Rule): Record<string, Rule> | undefined {
  return !Array.isArray(rule) && typeof rule === "object" && rule.type === "object" ? rule.props : undefined;
}

/** A function removing such nulls from params shaped by `props` (and nested object props), or none if no field can hold one. */
function nullStripper(props: Record<string, Rule>): ((value: unknown) => void) | undefined {
  const absentWhenNull: string[] = [];
  const nested: [string, (value: unknown) => void][] = [];
  for (const [key, rule] of Object.entries(props)) {
    if (key.startsWith("$$")) continue;
    if (nullMeansAbsent(rule)) absentWhenNull.push(key);
    const inner = nestedProps(rule);
    const strip = inner && nullStripper(inner);
    if (strip) nested.push([key, strip]);
  }
  if (!absentWhenNull.length && !nested.length) return undefined;
  return (value) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return;
    const record = value as Record<string, unknown>;
    for (const key of absentWhenNull) if (record[key] === null) delete record[key];
    for (const [key, strip] of nested) strip(record[key]);
  };
}
