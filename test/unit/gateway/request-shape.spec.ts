import { ERRORS } from "../../../lib/errors";
import { renderError } from "../../../lib/http-errors";
import { MAX_BODY_DEPTH } from "../../../lib/free-json";
import { allowedMethods, bodyProblem, unknownBodyFields } from "../../../services/gateway/request";

describe("request body shape", () => {
  it("takes objects and no body; refuses scalars, null and arrays", () => {
    expect(bodyProblem(undefined)).toBeNull();
    expect(bodyProblem({ a: [1, { b: 2 }] })).toBeNull();
    for (const body of [123, "x", null, true, [], [{}]]) expect(bodyProblem(body)).toMatchObject({ location: "body", type: "object" });
  });

  it("refuses nesting deeper than the limit without recursing", () => {
    const nest = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = i % 2 ? { a: value } : [value];
      return { top: value };
    };
    expect(bodyProblem(nest(MAX_BODY_DEPTH - 1))).toBeNull();
    expect(bodyProblem(nest(MAX_BODY_DEPTH))).toMatchObject({ type: "jsonDepth" });
    expect(bodyProblem(nest(200_000))).toMatchObject({ type: "jsonDepth" });
  });
});

describe("405 and 429 headers", () => {
  const alias = (method: string, pattern: RegExp) => ({ method, match: (path: string) => pattern.test(path) });
  it("lists the methods served at a path, in the usual order", () => {
    const aliases = [alias("POST", /^\/a$/), alias("GET", /^\/a$/), alias("DELETE", /^\/a\/\d+$/), alias("*", /.*/)];
    expect(allowedMethods(aliases, "/a")).toEqual(["GET", "POST"]);
    expect(allowedMethods(aliases, "/b")).toEqual([]);
  });

  it("answers Allow and Retry-After as headers, not body fields", () => {
    expect(renderError(ERRORS.methodNotAllowed(["GET", "POST"]), { method: "TRACE" })).toEqual({
      status: 405,
      body: { detail: "Method Not Allowed" },
      headers: { Allow: "GET, POST" },
    });
    expect(renderError(ERRORS.tooManyRequests("Too many", 30), { method: "POST" })).toMatchObject({ status: 429, headers: { "Retry-After": "30" } });
  });
});

describe("unknown body fields", () => {
  const params = { name: "string", instructions: { type: "string", optional: true }, temperature: "number|optional", $$async: true };
  const created = {
    status: 201,
    body: { $ref: "#/components/schemas/Agent" },
    schemas: { Agent: { type: "object", properties: { id: {}, name: {}, instructions: {}, created_at: {} } } },
  };

  it("names each field the params do not take, with the field meant when one is close", () => {
    expect(unknownBodyFields("POST", { name: "a", instruction: "x", colour: 1 }, { params })).toEqual([
      { field: "instruction", location: "body", type: "extra_forbidden", message: "Unknown field 'instruction'; did you mean 'instructions'?" },
      { field: "colour", location: "body", type: "extra_forbidden", message: "Unknown field 'colour'" },
    ]);
    expect(unknownBodyFields("POST", { $$async: true }, { params })).toHaveLength(1);
    expect(unknownBodyFields("PUT", { Temperatur: 1 }, { params })[0]!.message).toMatch(/did you mean 'temperature'/);
  });

  it("takes the fields of the record a create or update answers with (sent back whole), not those of other answers", () => {
    const echoed = { name: "a", id: 1, created_at: "2026-01-01T00:00:00Z" };
    expect(unknownBodyFields("POST", echoed, { params, response: created })).toEqual([]);
    expect(unknownBodyFields("PATCH", echoed, { params, response: { ...created, status: 200 } })).toEqual([]);
    expect(unknownBodyFields("POST", echoed, { params, response: { ...created, status: 200 } }).map((p) => p.field)).toEqual(["id", "created_at"]);
  });

  it("leaves bodies to actions without params, or whose params are the whole body", () => {
    expect(unknownBodyFields("POST", { anything: 1 }, {})).toEqual([]);
    expect(unknownBodyFields("POST", { anything: 1 }, { params: { $$root: true, type: "object" } })).toEqual([]);
    expect(unknownBodyFields("POST", undefined, { params })).toEqual([]);
  });
});
