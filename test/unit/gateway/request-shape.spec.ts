import { ERRORS } from "../../../lib/errors";
import { renderError } from "../../../lib/http-errors";
import { MAX_BODY_DEPTH } from "../../../lib/free-json";
import { allowedMethods, bodyProblem } from "../../../services/gateway/request";

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
