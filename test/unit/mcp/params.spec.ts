import * as z from "zod/v4";
import { zodShape } from "../../../services/mcp/params";
import { documentIdParam, searchDocumentsParams } from "../../../services/search";
import { knowledgeCall, knowledgeSearchInput, textErrorResult } from "../../../services/mcp/tools";
import { ERRORS } from "../../../lib/errors";

describe("zodShape (a tool's input schema from REST params)", () => {
  it("keeps bounds, enums, defaults, optional fields and descriptions", () => {
    const shape = z.object(
      zodShape({
        name: { type: "string", min: 1, max: 3, description: "A name" },
        count: { type: "number", integer: true, min: 0, max: 9, default: 2, optional: true },
        ids: { type: "array", optional: true, max: 2, items: { type: "number", integer: true, positive: true, convert: true } },
        kind: { type: "enum", values: ["a", "b"], default: "a", optional: true },
        flag: { type: "boolean", optional: true },
      }),
    );
    expect(shape.parse({ name: "ab" })).toEqual({ name: "ab", count: 2, kind: "a" });
    for (const bad of [{}, { name: "" }, { name: "abcd" }, { name: "a", count: 1.5 }, { name: "a", count: 10 }, { name: "a", ids: [0] }, { name: "a", ids: [1, 2, 3] }, { name: "a", kind: "c" }]) {
      expect(shape.safeParse(bad).success).toBe(false);
    }
    const json = z.toJSONSchema(shape, { io: "input" }) as { properties: Record<string, Record<string, unknown>>; required: string[] };
    expect(json.required).toEqual(["name"]);
    expect(json.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 3, description: "A name" });
    expect(json.properties.ids).toMatchObject({ type: "array", maxItems: 2, items: { type: "integer", minimum: 1 } });
  });

  it("counts a string's length in characters, as the action and the stated maxLength do (an emoji is one)", () => {
    const shape = z.object(zodShape({ query: { type: "string", min: 2, max: 3 } }));
    expect(shape.safeParse({ query: "😀😀😀" }).success).toBe(true);
    expect(shape.safeParse({ query: "😀😀😀😀" }).success).toBe(false);
    expect(shape.safeParse({ query: "😀" }).success).toBe(false);
    expect(z.toJSONSchema(z.object(knowledgeSearchInput), { io: "input" }).properties).toMatchObject({ query: { type: "string", minLength: 1, maxLength: 1000, pattern: "\\S" } });
    // A blank query is refused by the tool's schema as by the route.
    expect(z.object(knowledgeSearchInput).safeParse({ query: "   " }).success).toBe(false);
  });

  it("refuses a rule kind it does not know rather than accept anything", () => {
    expect(() => zodShape({ at: { type: "date" } })).toThrow(/date/);
  });

  it("gives svc_knowledge_search the REST search's defaults", () => {
    expect(z.object(knowledgeSearchInput).parse({ query: "volcano" })).toEqual({ query: "volcano", mode: "hybrid", limit: 20, offset: 0 });
    expect(Object.keys(knowledgeSearchInput)).toEqual(Object.keys(searchDocumentsParams));
    expect(Object.keys(zodShape(documentIdParam))).toEqual(["document_id"]);
  });
});

describe("knowledge tools", () => {
  it("call the REST action with the arguments as they are, absent ones left out", () => {
    expect(knowledgeCall("knowledge.searchDocuments", { query: "q", mode: "keyword", source_ids: undefined })).toEqual({
      action: "knowledge.searchDocuments",
      params: { query: "q", mode: "keyword" },
    });
  });

  it("answer errors as text only (the SDK client checks any structuredContent against the output schema)", () => {
    expect(textErrorResult(ERRORS.notFound("Document", "d1"))).toEqual({ isError: true, content: [{ type: "text", text: expect.stringMatching(/not found/i) }] });
  });
});
