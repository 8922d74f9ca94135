import * as z from "zod/v4";
import { Errors } from "moleculer";
import { ERRORS } from "../../../lib/errors";
import {
  collectedDataCall,
  collectedDataDeleteCall,
  collectedDataDeleteInput,
  collectedDataInput,
  errorResult,
  jsonResult,
  listResult,
} from "../../../services/mcp/tools";

const parseData = (args: unknown) => z.object(collectedDataInput).parse(args);
const parseDelete = (args: unknown) => z.object(collectedDataDeleteInput).parse(args);

describe("svc_collected_data parameters", () => {
  it("applies the interface's defaults and drops unknown keys", () => {
    expect(parseData({ account_id: 7 })).toEqual({ action: "list", skip: 0, limit: 10, group_by_agent: false, include_facets: false });
  });

  it("refuses values outside the table (action, status, negative skip, fractional ids)", () => {
    for (const bad of [{ action: "export" }, { status: "deleted" }, { skip: -1 }, { limit: 0 }, { entity_id: 1.5 }, { agent_id: "3" }, { days: 0 }]) {
      expect(z.object(collectedDataInput).safeParse(bad).success).toBe(false);
    }
  });
});

describe("collectedDataCall", () => {
  it("maps list onto entities.list with filters and paging, leaving out absent filters", () => {
    expect(collectedDataCall(parseData({ agent_id: 3, template_name: "Lead", status: "new", include_facets: true, group_by_agent: true }))).toEqual({
      action: "entities.list",
      params: { agent_id: 3, template_name: "Lead", status: "new", skip: 0, limit: 10, include_facets: true },
    });
  });

  it("maps get onto entities.get and ignores every list-only parameter", () => {
    expect(collectedDataCall(parseData({ action: "get", entity_id: 9, status: "new", limit: 3, agent_id: 2 }))).toEqual({
      action: "entities.get",
      params: { entity_id: 9 },
    });
  });

  it("refuses get without entity_id with a validation error naming the field", () => {
    expect(() => collectedDataCall(parseData({ action: "get" }))).toThrow(Errors.ValidationError);
    try {
      collectedDataCall(parseData({ action: "get" }));
    } catch (err) {
      expect((err as Errors.ValidationError).data).toEqual([expect.objectContaining({ field: "entity_id" })]);
    }
  });

  it("maps stats onto entities.stats with agent, window and grouping only", () => {
    expect(collectedDataCall(parseData({ action: "stats", days: 7, group_by_agent: true, search: "x" }))).toEqual({
      action: "entities.stats",
      params: { days: 7, group_by_agent: true },
    });
  });
});

describe("svc_collected_data_delete parameters", () => {
  it("defaults confirmed to false and needs at least one integer id", () => {
    expect(collectedDataDeleteCall(parseDelete({ entity_ids: [1, 2] }))).toEqual({
      action: "entities.deleteMany",
      params: { entity_ids: [1, 2], confirmed: false },
    });
    for (const bad of [{}, { entity_ids: [] }, { entity_ids: [1.5] }, { entity_ids: ["1"] }, { entity_ids: [1], confirmed: "yes" }]) {
      expect(z.object(collectedDataDeleteInput).safeParse(bad).success).toBe(false);
    }
  });
});

describe("listResult", () => {
  const page = { data: [{ id: 1 }], pagination: { total: 1, skip: 0, limit: 10, has_more: false }, facets: { entity_types: [], statuses: {} } };

  it("keeps pagination to total, skip and limit and leaves facets out unless asked for", () => {
    expect(listResult(page, false)).toEqual({ data: [{ id: 1 }], pagination: { total: 1, skip: 0, limit: 10 } });
  });

  it("adds facets (null when the service sent none) when asked for", () => {
    expect(listResult(page, true).facets).toEqual({ entity_types: [], statuses: {} });
    expect(listResult({ data: [], pagination: { total: 0, skip: 0, limit: 10 } }, true).facets).toBeNull();
  });
});

describe("tool results", () => {
  it("returns structured content and the same JSON as text", () => {
    const value = { deleted: 2 };
    expect(jsonResult(value)).toEqual({ content: [{ type: "text", text: '{"deleted":2}' }], structuredContent: value });
  });

  it("renders client errors with their status and message", () => {
    const result = errorResult(ERRORS.notFound("Collected data record", 5));
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "Collected data record 5 not found" }]);
    expect(result.structuredContent).toEqual({ status: 404, detail: "Collected data record 5 not found" });
  });

  it("lists validation problems by field", () => {
    const result = errorResult(ERRORS.validation([{ field: "entity_id", message: "entity_id is required when action is get", type: "required" }]));
    expect(result.content).toEqual([{ type: "text", text: "Invalid arguments: entity_id: entity_id is required when action is get" }]);
    expect(result.structuredContent).toMatchObject({ status: 422 });
  });

  it("never reveals the details of a server error", () => {
    const result = errorResult(new Error("connection string mongodb://secret"));
    expect(result.content).toEqual([{ type: "text", text: "Internal Server Error" }]);
    expect(result.structuredContent).toEqual({ status: 500, detail: "Internal Server Error" });
  });
});
