import { accessLevelRule as agentAccessLevel } from "../../services/agents/rules";
import { accessLevelRule as teamAccessLevel, passwordProblem } from "../../services/teams/rules";
import { documentProblems } from "../../services/teams/config-schema";
import { isoDate } from "../../lib/iso-date";
import { dateValue } from "../../lib/search/filters";
import { decimalNumber, PlatformValidator } from "../../lib/validator";

describe("params validator: null in an optional field that is not nullable is not given", () => {
  const validator = new PlatformValidator();
  const check = validator.compile({
    name: { type: "string", optional: true },
    description: { type: "string", optional: true, nullable: true },
    level: "string|optional",
    title: "string",
    refresh: { type: "object", optional: true, nullable: true, props: { cron: { type: "string", optional: true }, prune: { type: "boolean", optional: true } } },
  });

  it("drops such nulls after a successful check and keeps nullable ones", () => {
    const params: Record<string, unknown> = { title: "t", name: null, description: null, level: null, refresh: { cron: null, prune: true } };
    expect(check(params)).toBe(true);
    expect(params).toEqual({ title: "t", description: null, refresh: { prune: true } });
  });

  it("still refuses null in a required field and leaves params untouched on failure", () => {
    const params: Record<string, unknown> = { title: null, name: null };
    expect(check(params)).not.toBe(true);
    expect(params).toEqual({ title: null, name: null });
  });

  it("keeps an async checker async", async () => {
    const asyncCheck = validator.compile({ $$async: true, name: { type: "string", optional: true } });
    expect(asyncCheck.async).toBe(true);
    const params: Record<string, unknown> = { name: null };
    await expect(asyncCheck(params)).resolves.toBe(true);
    expect(params).toEqual({});
  });
});

describe("params validator: messages", () => {
  it("names the allowed values of an enum as allowed, not as the value sent", () => {
    const check = new PlatformValidator().compile({ sort_by: { type: "enum", values: ["name", "created_at"] } });
    expect(check({ sort_by: "$where" })).toEqual([
      expect.objectContaining({ type: "enumValue", field: "sort_by", message: "The 'sort_by' field must be one of: name, created_at." }),
    ]);
  });

  it("folds access levels to the interface's case (agents lower, teams upper) and names the allowed ones", () => {
    const validator = new PlatformValidator();
    const agent = validator.compile({ access_level: agentAccessLevel });
    const team = validator.compile({ access_level: teamAccessLevel });
    const agentParams = { access_level: "PASSWORD_PROTECTED" };
    const teamParams = { access_level: "public" };
    expect([agent(agentParams), team(teamParams)]).toEqual([true, true]);
    expect([agentParams.access_level, teamParams.access_level]).toEqual(["password_protected", "PUBLIC"]);
    expect(team({ access_level: "secret" })).toEqual([
      expect.objectContaining({ type: "stringEnum", message: "The 'access_level' field must be one of: PRIVATE, PASSWORD_PROTECTED, PUBLIC." }),
    ]);
  });
});


describe("params validator: string lengths count characters (code points), as the OpenAPI document's maxLength does", () => {
  const check = new PlatformValidator().compile({
    name: { type: "string", min: 2, max: 5 },
    code: { type: "string", length: 3, optional: true },
    tags: { type: "array", optional: true, items: { type: "string", max: 2 } },
  });

  it("takes as many emoji as the maximum allows, and refuses one more, naming the length in characters", () => {
    expect(check({ name: "😀😀😀😀😀" })).toBe(true);
    expect(check({ name: "😀😀😀😀😀😀" })).toEqual([expect.objectContaining({ type: "stringMax", field: "name", expected: 5, actual: 6 })]);
    expect(check({ name: "😀", code: "😀a😀" })).toEqual([expect.objectContaining({ type: "stringMin", field: "name", expected: 2, actual: 1 })]);
    expect(check({ name: "ab", tags: ["😀😀", "😀😀😀"] })).toEqual([expect.objectContaining({ type: "stringMax", field: "tags[1]", actual: 3 })]);
  });

  it("counts a lone surrogate as one character", () => {
    expect(check({ name: "\uD83D\uD83D" })).toBe(true);
  });

  it("is the rule of the teams configuration document's own validator too", () => {
    expect(documentProblems({ name: "😀".repeat(255) })).toEqual([]);
    expect(documentProblems({ name: "😀".repeat(256) })).toEqual([expect.objectContaining({ type: "stringMax", field: "name" })]);
  });

  it("is how a team's password is measured (at least 8 characters)", () => {
    expect(passwordProblem("PASSWORD_PROTECTED", "🔑".repeat(8), false)).toBeNull();
    expect(passwordProblem("PASSWORD_PROTECTED", "🔑".repeat(7), false)).toMatch(/at least 8 characters/);
  });
});

describe("params validator: booleans sent as text are read in any case", () => {
  const check = new PlatformValidator().compile({ force: { type: "boolean", convert: true, optional: true } });
  const read = (force: unknown) => {
    const params: Record<string, unknown> = { force };
    return check(params) === true ? params.force : "refused";
  };

  it("takes True and FALSE as Python's requests and other clients write them, and nothing else new", () => {
    expect(["True", "FALSE", "On", "true", "0", 1, false].map(read)).toEqual([true, false, true, true, false, true, false]);
    expect(["yes", " true", "", 2].map(read)).toEqual(["refused", "refused", "refused", "refused"]);
  });
});

describe("params validator: numbers sent as text are read in decimal notation only", () => {
  const check = new PlatformValidator().compile({ limit: { type: "number", integer: true, min: 1, convert: true, optional: true }, weight: { type: "number", optional: true } });

  it("converts decimal text, signs, fractions and exponents as JSON writes numbers", () => {
    for (const [text, value] of [["5", 5], ["-2", -2], ["+3", 3], ["0.5", 0.5], [".5", 0.5], ["1e3", 1000], ["10.0", 10]] as const) expect(decimalNumber(text)).toBe(value);
    const params: Record<string, unknown> = { limit: "20" };
    expect(check(params)).toBe(true);
    expect(params.limit).toBe(20);
  });

  it("refuses what Number() would also read: blank, padded, hex, binary, octal and infinite text, arrays, booleans", () => {
    for (const limit of ["", " 5", "5 ", "0x10", "0b1", "0o7", "Infinity", "1_000", ["5"], true]) {
      expect([limit, check({ limit })]).toEqual([limit, [expect.objectContaining({ type: "number", field: "limit" })]]);
    }
  });

  it("takes an integer's digits only where the rule wants an integer, within what a double holds exactly", () => {
    for (const limit of ["1e1", "12.0", "+0.5e1", "99999999999999999999", "9007199254740993"]) {
      expect([limit, check({ limit })]).toEqual([limit, [expect.objectContaining({ type: "number", field: "limit" })]]);
    }
    for (const [text, value] of [["12", 12], ["+7", 7], ["007", 7], ["9007199254740991", 9007199254740991]] as const) expect(decimalNumber(text, true)).toBe(value);
  });

  it("leaves rules that do not convert as they were: a number is a number", () => {
    expect(check({ weight: 0.25 })).toBe(true);
    expect(check({ weight: "0.25" })).toEqual([expect.objectContaining({ type: "number", field: "weight" })]);
  });
});

describe("params validator: dates sent as text are read in ISO 8601 only", () => {
  const check = new PlatformValidator().compile({ at: { type: "date", convert: true } });
  const read = (at: unknown) => {
    const params: Record<string, unknown> = { at };
    return check(params) === true ? (params.at as Date).toISOString() : "refused";
  };

  it("reads RFC 3339 date-times, a date alone as UTC midnight, and a date-time without an offset as UTC", () => {
    expect(read("2026-12-01T10:00:00Z")).toBe("2026-12-01T10:00:00.000Z");
    expect(read("2026-12-01T10:00:00.123456+02:00")).toBe("2026-12-01T08:00:00.123Z");
    expect(read("2026-12-01t10:00:00-0130")).toBe("2026-12-01T11:30:00.000Z");
    expect(read("2026-12-01 10:00")).toBe("2026-12-01T10:00:00.000Z");
    expect(read("2026-12-01")).toBe("2026-12-01T00:00:00.000Z");
    expect(read("2024-02-29")).toBe("2024-02-29T00:00:00.000Z");
    expect(read(new Date(5))).toBe("1970-01-01T00:00:00.005Z");
  });

  it("refuses numbers, other notations and days a month does not have", () => {
    for (const at of ["1", 1, true, "March 7", "Tue, 01 Dec 2026 10:00:00 GMT", "2026-02-30", "2026-13-01", "2026-12-01T25:00:00Z", "", " 2026-12-01"]) expect([at, read(at)]).toEqual([at, "refused"]);
    expect(isoDate("2026-04-31").getTime()).toBeNaN();
  });

  it("search filters read metadata dates the same way (and HTTP dates as Last-Modified carries them)", () => {
    expect(dateValue("2026-12-01T10:00")).toBe(Date.UTC(2026, 11, 1, 10));
    expect(dateValue("2026-12-01T10:00:00+01:00")).toBe(Date.UTC(2026, 11, 1, 9));
    expect(dateValue("Tue, 01 Dec 2026 10:00:00 GMT")).toBe(Date.UTC(2026, 11, 1, 10));
    expect(dateValue("2026-02-30")).toBeUndefined();
  });
});
