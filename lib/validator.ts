import { Validators } from "moleculer";
import { charCount } from "./text";
// fastest-validator's own string rule, which the platform's wraps (the package exports no path to it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const builtInString = require("fastest-validator/lib/rules/string") as StringRule;

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
type StringRule = (this: unknown, rule: { schema: Record<string, unknown> }, path: string, context: unknown) => { sanitized?: boolean; source: string };

const UTF16_LENGTH = "var len = value.length;";
const CHARACTER_LENGTH = "var len = this.charCount(value);";

/**
 * fastest-validator's string rule, counting `min`, `max` and `length` in characters (code points, lib/text.ts) as
 * JSON Schema and the interface count them, not in UTF-16 units: 200 emoji fit a field of at most 200 characters.
 */
function stringInCharacters(this: unknown, rule: { schema: Record<string, unknown> }, path: string, context: unknown) {
  const compiled = builtInString.call(this, rule, path, context);
  const { min, max, length } = rule.schema;
  if (min == null && max == null && length == null) return compiled;
  if (compiled.source.split(UTF16_LENGTH).length !== 2) throw new Error("fastest-validator's string rule no longer measures `value.length` once");
  return { ...compiled, source: compiled.source.replace(UTF16_LENGTH, CHARACTER_LENGTH) };
}

/** Installs the string rule in a fastest-validator instance, with the count its checks call. */
function countCharacters(validator: { add(type: string, rule: unknown): void }) {
  validator.add("string", stringInCharacters);
  Object.assign(validator, { charCount });
}

/** Options of every fastest-validator instance of the platform. */
export const PLATFORM_VALIDATOR_OPTIONS = { messages: PLATFORM_MESSAGES, plugins: [countCharacters] };

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
