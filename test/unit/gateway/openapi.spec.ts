import Validator from "fastest-validator";
import { objectSchema, ruleToSchema } from "../../../lib/json-schema";
import { defineResource, defineView, NO_CONTENT } from "../../../lib/resource";
import { openApiDocument } from "../../../services/gateway/openapi";

const Token = defineView("Token", { access_token: { read: { type: "string" } } });
const UserCreated = defineView("UserCreateResponse", { id: { read: { type: "number" } } });
const tools = defineResource({
  name: "Tool",
  collection: "tools",
  storage: { name: "Tool" },
  path: "/tools",
  idParam: "tool_id",
  event: "tool",
  fields: { name: { write: { type: "string" } } },
  list: { limits: { def: 50 }, sort: { _id: 1 } },
});

describe("ruleToSchema", () => {
  it("maps numbers, strings, enums, arrays, objects and dates to JSON Schema", () => {
    expect(ruleToSchema({ type: "number", integer: true, min: 1, max: 200, default: 50, convert: true })).toEqual({ type: "integer", minimum: 1, maximum: 200, default: 50 });
    expect(ruleToSchema({ type: "number", positive: true })).toEqual({ type: "number", exclusiveMinimum: 0 });
    expect(ruleToSchema({ type: "string", min: 1, max: 100, pattern: "^[a-z]+$" })).toEqual({ type: "string", minLength: 1, maxLength: 100, pattern: "^[a-z]+$" });
    expect(ruleToSchema({ type: "enum", values: ["asc", "desc"], default: "desc" })).toEqual({ enum: ["asc", "desc"], default: "desc" });
    expect(ruleToSchema({ type: "array", items: "number", max: 8 })).toEqual({ type: "array", items: { type: "number" }, maxItems: 8 });
    expect(ruleToSchema({ type: "object", props: { a: "string", b: { type: "boolean", optional: true } } })).toEqual({
      type: "object",
      properties: { a: { type: "string" }, b: { type: "boolean" } },
      required: ["a"],
      additionalProperties: true,
    });
    expect(ruleToSchema({ type: "date", convert: true })).toEqual({ type: "string", format: "date-time" });
    expect(ruleToSchema("email|optional")).toEqual({ type: "string", format: "email" });
  });

  it("says whether objects take keys they do not list (generators read an unsaid one as empty)", () => {
    expect(ruleToSchema({ type: "object" })).toEqual({ type: "object", additionalProperties: true });
    expect(ruleToSchema({ type: "object", strict: true, props: { a: "string" } })).toEqual({ type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false });
    expect(ruleToSchema({ type: "record", value: "number" })).toEqual({ type: "object", additionalProperties: { type: "number" } });
  });

  it("states the checks a generator must know beyond the type: http(s) URLs, base64, unique items", () => {
    expect(ruleToSchema({ type: "url" })).toEqual({ type: "string", format: "uri", pattern: "^https?://\\S+" });
    expect(ruleToSchema({ type: "array", items: "string", unique: true })).toEqual({ type: "array", items: { type: "string" }, uniqueItems: true });
    const base64 = ruleToSchema({ type: "string", base64: true });
    expect(base64).toMatchObject({ type: "string", contentEncoding: "base64" });
    // What the stated patterns take, the validator takes, and the other way round.
    const check = new Validator().compile({ url: { type: "url", optional: true }, data: { type: "string", base64: true, optional: true } });
    const urlPattern = new RegExp(ruleToSchema({ type: "url" }).pattern as string);
    for (const url of ["https://example.com/a", "http://x", "ftp://example.com", "example.com", "https://", "mailto:a@b.c"]) expect(urlPattern.test(url)).toBe(check({ url }) === true);
    const base64Pattern = new RegExp(base64.pattern as string);
    for (const data of ["", "QQ==", "QUI=", "QUJD", "QUJDRA==", "Q", "QQ=", "QQ", "Q Q=", "QUJD*A=="]) expect(base64Pattern.test(data)).toBe(check({ data }) === true);
  });

  it("lists a case-folded enum in its stored case only, and carries descriptions", () => {
    expect(ruleToSchema({ type: "string", uppercase: true, enum: ["PRIVATE", "PUBLIC"], description: "Who may read" })).toEqual({
      type: "string",
      enum: ["PRIVATE", "PUBLIC"],
      description: "Who may read",
    });
    expect(ruleToSchema({ type: "string", lowercase: true, enum: ["private"] }).description).toMatch(/any letter case/i);
  });

  it("marks nullable rules and leaves unknown types open", () => {
    expect(ruleToSchema({ type: "string", nullable: true })).toEqual({ type: ["string", "null"] });
    expect(ruleToSchema({ type: "enum", values: ["a"], nullable: true })).toEqual({ anyOf: [{ enum: ["a"] }, { type: "null" }] });
    expect(ruleToSchema({ type: "custom" })).toEqual({});
  });

  it("requires what is neither optional nor defaulted, and skips $$ settings", () => {
    expect(objectSchema({ $$strict: "remove", name: "string", limit: { type: "number", default: 5 }, note: { type: "string", optional: true } })).toEqual({
      type: "object",
      properties: { name: { type: "string" }, limit: { type: "number", default: 5 }, note: { type: "string" } },
      required: ["name"],
    });
  });
});

describe("openApiDocument", () => {
  const update = { rest: ["PUT /tools/:tool_id", "PATCH /tools/:tool_id"], operationIds: ["update", "patch"], summary: "Update a tool" };
  const doc = openApiDocument(
    [
      { method: "GET", path: "/api/v1/tools/:tool_id", action: "tools.get", params: { tool_id: { type: "number", integer: true, description: "The tool's id" } }, response: tools.view.one() },
      { method: "PUT", path: "/api/v1/tools/:tool_id", action: "tools.update", ...update, params: { tool_id: "number", name: { type: "string", optional: true } } },
      { method: "PATCH", path: "/api/v1/tools/:tool_id", action: "tools.update", ...update, params: { tool_id: "number" } },
      { method: "GET", path: "/api/v1/tools", action: "tools.list", params: { limit: { type: "number", default: 50, description: "Page size" } }, response: tools.view.page() },
      { method: "POST", path: "/api/v1/login/access-token", action: "users.login", params: { email: "email", password: "string" }, auth: "none", response: Token.one() },
      { method: "POST", path: "/api/v1/users", action: "users.create", params: { email: "email" }, auth: "optional", response: UserCreated.one(201) },
      { method: "DELETE", path: "/api/v1/tools/:tool_id", action: "tools.remove", params: { tool_id: "number" }, response: NO_CONTENT },
    ],
    { title: "agent-platform", webhookEvents: [{ type: "tool.created", record: "Tool" }, { type: "tool.deleted", record: "Tool" }] },
  );

  it("is an OpenAPI 3.1.0 document, version 1.0.0, with both credential schemes", () => {
    expect(doc).toMatchObject({ openapi: "3.1.0", info: { title: "agent-platform", version: "1.0.0" }, security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }] });
  });

  it("turns :params into {params}, puts the rest in the query for GET and in the body for writes", () => {
    const byId = doc.paths["/api/v1/tools/{tool_id}"] as Record<string, any>;
    expect(byId.get.parameters).toEqual([{ name: "tool_id", in: "path", required: true, description: "The tool's id", schema: { type: "integer" } }]);
    expect(byId.put.requestBody.content["application/json"].schema).toEqual({ type: "object", properties: { name: { type: "string" } }, additionalProperties: false });
    expect(byId.patch.requestBody).toBeUndefined();
    expect((doc.paths["/api/v1/tools"] as Record<string, any>).get.parameters).toEqual([
      { name: "limit", in: "query", required: false, description: "Page size", schema: { type: "number", default: 50 } },
    ]);
  });

  it("gives every route of an action its declared id, and aliases a summary naming their main route", () => {
    const byId = doc.paths["/api/v1/tools/{tool_id}"] as any;
    expect([byId.put.operationId, byId.patch.operationId]).toEqual(["tools.update", "tools.patch"]);
    expect(byId.put.summary).toBe("Update a tool");
    expect(byId.patch.summary).toBe("Update a tool (same as PUT /api/v1/tools/{tool_id})");
  });

  it("declares the tags it uses, a relative server, and each webhook event's payload", () => {
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    expect(doc.tags.map((t) => t.name)).toEqual(["tools", "users", "webhooks"]);
    const created = (doc.webhooks["tool.created"] as any).post.requestBody.content["application/json"].schema;
    expect(created).toMatchObject({ required: ["type", "timestamp", "data"], properties: { type: { const: "tool.created" }, data: { $ref: "#/components/schemas/Tool" } } });
    const deleted = (doc.webhooks["tool.deleted"] as any).post.requestBody.content["application/json"].schema;
    expect(deleted.properties.data).toMatchObject({ required: ["id"], properties: { id: { type: "integer" } } });
  });

  it("opens routes that need no credentials", () => {
    expect((doc.paths["/api/v1/login/access-token"] as any).post.security).toEqual([]);
  });

  it("describes each success with its status and body, and the refusals every operation can answer", () => {
    const op = (path: string, method: string) => (doc.paths[path] as Record<string, any>)[method];
    expect(op("/api/v1/login/access-token", "post").responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Token" });
    expect(op("/api/v1/users", "post").responses["201"]).toMatchObject({ headers: { Location: {} }, content: { "application/json": { schema: { $ref: "#/components/schemas/UserCreateResponse" } } } });
    expect(op("/api/v1/users", "post").security).toEqual([{}, { HTTPBearer: [] }, { APIKeyHeader: [] }]);
    expect(op("/api/v1/tools/{tool_id}", "delete").responses["204"]).toEqual({ description: "No Content" });
    expect(op("/api/v1/tools", "get").responses["200"].content["application/json"].schema.required).toEqual(["data", "pagination"]);
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods as Record<string, any>)) {
        expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["400", "401", "403", "404", "422", "429"]));
        if (method !== "get") expect(operation.responses["409"]).toBeDefined();
        for (const response of Object.values(operation.responses as Record<string, any>)) {
          for (const media of Object.values((response.content ?? {}) as Record<string, any>)) {
            const name = media.schema.$ref?.split("/").pop();
            if (name) expect(doc.components.schemas).toHaveProperty(name);
          }
        }
        expect(path.startsWith("/api/v1")).toBe(true);
      }
    }
  });
});
