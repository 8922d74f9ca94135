import { Errors } from "moleculer";
import { ERRORS } from "../../../lib/errors";
import { locateField, renderError } from "../../../lib/http-errors";
import { preferredLocale } from "../../../services/gateway/request";

describe("renderError: the one error-to-HTTP mapping", () => {
  const post = { method: "POST", query: {}, body: { email: "x" } };

  it.each([
    [ERRORS.badRequest("bad"), 400, { detail: "bad" }],
    [ERRORS.unauthorized(), 401, { detail: "Not authenticated" }],
    [ERRORS.forbidden("nope"), 403, { detail: "nope" }],
    [ERRORS.notFound("Tool", 7), 404, { detail: "Tool 7 not found" }],
    [ERRORS.conflict("in use", { collected_count: 3 }), 409, { detail: "in use", collected_count: 3 }],
  ])("%s keeps its status and message", (err, status, body) => {
    expect(renderError(err, post)).toEqual({ status, body });
  });

  it("renders validator errors as HTTPValidationError items with locations", () => {
    const err = new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", [
      { type: "email", field: "email", message: "bad email" },
      { type: "required", field: "password", message: "required" },
      { type: "numberMax", field: "limit", message: "too big" },
      { type: "stringMax", field: "items[2].title", message: "too long" },
    ]);
    const req = { method: "POST", query: { limit: "999" }, body: { email: "x" } };
    expect(renderError(err, req)).toEqual({
      status: 422,
      body: {
        detail: [
          { loc: ["body", "email"], msg: "bad email", type: "email" },
          { loc: ["body", "password"], msg: "required", type: "required" },
          { loc: ["query", "limit"], msg: "too big", type: "numberMax" },
          { loc: ["body", "items", 2, "title"], msg: "too long", type: "stringMax" },
        ],
      },
    });
  });

  it("keeps an explicit location from our own validation problems", () => {
    const err = ERRORS.validation([{ field: "x-access-password", message: "missing", type: "required", location: "header" }]);
    expect(renderError(err, post).body).toEqual({ detail: [{ loc: ["header", "x-access-password"], msg: "missing", type: "required" }] });
  });

  it("maps body-parser failures to plain 400 and 413 messages", () => {
    expect(renderError({ status: 400, type: "entity.parse.failed", message: "Unexpected token" }, post)).toEqual({
      status: 400,
      body: { detail: "Malformed JSON in request body" },
    });
    expect(renderError({ status: 413, type: "entity.too.large", message: "request entity too large" }, post).status).toBe(413);
  });

  it("hides internals of unexpected errors behind a 500", () => {
    expect(renderError(new Error("db password is hunter2"), post)).toEqual({ status: 500, body: { detail: "Internal Server Error" } });
  });

  it("answers 503 when a service is not available and 504 on timeouts", () => {
    expect(renderError(new Errors.ServiceNotFoundError({ action: "users.get" }), post).status).toBe(503);
    expect(renderError(new Errors.RequestTimeoutError({ action: "users.get", nodeID: "n" }), post).status).toBe(504);
  });
});

describe("locateField", () => {
  it("uses the path alias for path params and the method for missing fields", () => {
    expect(locateField("user_id", { method: "GET", query: {}, $alias: { path: "/api/v1/users/:user_id" } })).toBe("path");
    expect(locateField("limit", { method: "GET", query: {} })).toBe("query");
    expect(locateField("name", { method: "PUT", query: {}, body: {} })).toBe("body");
  });
});

describe("preferredLocale", () => {
  it.each([
    ["de-DE,de;q=0.9,en;q=0.5", "de-DE"],
    ["en;q=0.2, fr-CA", "fr-CA"],
    ["*", undefined],
    ["", undefined],
    [undefined, undefined],
    ["<script>", undefined],
  ])("%s gives %s", (header, locale) => {
    expect(preferredLocale(header)).toBe(locale);
  });
});
