import {
  attributeKeys,
  buildEntityFilter,
  deletionPreview,
  facetsRead,
  searchText,
  statsByAgentRead,
  statsRead,
  statusCounts,
  templateKey,
  typeCounts,
  verifyProvenance,
  windowStart,
  type CountCell,
  type FacetCell,
  type ResolvedFilters,
} from "../../../services/entities/rules";

const now = new Date("2026-11-23T12:00:00.000Z");
const resolved = (filters: ResolvedFilters["filters"], key: string | null = null): ResolvedFilters => ({ accountId: 4, filters, templateKey: key, now });

describe("search text", () => {
  it("lower-cases agent name, type name and every attribute value, nested ones included", () => {
    const text = searchText("Sales Bot", "Lead", { name: "ADA Lovelace", budget: 1200, tags: ["VIP", { city: "Paris" }], empty: null, ok: true });
    for (const part of ["sales bot", "lead", "ada lovelace", "1200", "vip", "paris", "true"]) expect(text).toContain(part);
    expect(text).toBe(text.toLowerCase());
    expect(text).not.toContain("null");
  });

  it("does not index attribute names, only values", () => {
    expect(searchText("a", "b", { secretkey: "v" })).not.toContain("secretkey");
  });

  it("keys templates by trimmed lower-cased name and sorts attribute keys", () => {
    expect(templateKey("  Lead Form ")).toBe("lead form");
    expect(templateKey(undefined)).toBe("");
    expect(attributeKeys({ b: 1, a: 2, C: 3 })).toEqual(["C", "a", "b"]);
  });
});

describe("buildEntityFilter", () => {
  it("always scopes by account", () => {
    expect(buildEntityFilter(resolved({}))).toEqual({ account_id: 4 });
  });

  it("applies agent, template key, status, days window and escaped search", () => {
    const filter = buildEntityFilter(resolved({ agent_id: 9, status: "reviewed", days: 7, search: "  A.B (x) " }, "lead"));
    expect(filter).toEqual({
      account_id: 4,
      agent_id: 9,
      entity_type_key: "lead",
      status: "reviewed",
      created_at: { $gte: new Date("2026-11-16T12:00:00.000Z") },
      search_text: { $regex: "a\\.b \\(x\\)" },
    });
  });

  it("applies no template filter when the name matched no template", () => {
    expect(buildEntityFilter(resolved({ template_name: "Nope" }, null))).toEqual({ account_id: 4 });
  });

  it("drops the template or the status condition for facets, keeping the others", () => {
    const r = resolved({ agent_id: 9, status: "new" }, "lead");
    expect(buildEntityFilter(r, { template: true })).toEqual({ account_id: 4, agent_id: 9, status: "new" });
    expect(buildEntityFilter(r, { status: true })).toEqual({ account_id: 4, agent_id: 9, entity_type_key: "lead" });
  });

  it("ignores a blank search", () => {
    expect(buildEntityFilter(resolved({ search: "   " }))).toEqual({ account_id: 4 });
  });

  it("computes the window start in whole days", () => {
    expect(windowStart(now, 1).toISOString()).toBe("2026-11-22T12:00:00.000Z");
  });
});

describe("provenance", () => {
  it("nulls message ids that are not messages of the session and keeps quotes", () => {
    const checked = verifyProvenance(
      { email: { message_id: 3, quote: "a@b.c" }, name: { message_id: 99, quote: "Ada" }, phone: { message_id: null, quote: "555" } },
      new Set([3]),
    );
    expect(checked).toEqual({ email: { message_id: 3, quote: "a@b.c" }, name: { message_id: null, quote: "Ada" }, phone: { message_id: null, quote: "555" } });
  });
});

describe("counts", () => {
  const cells: CountCell[] = [
    { agent_id: 1, status: "new", template_id: 10, template_name: "Lead", count: 3 },
    { agent_id: 1, status: "reviewed", template_id: 11, template_name: "Ticket", count: 1 },
    { agent_id: 2, status: "new", template_id: 10, template_name: "Lead", count: 2 },
    { agent_id: 2, status: "archived", template_id: null, template_name: "Import", count: 5 },
  ];
  const names = new Map([[1, "Alpha"], [2, "Beta"]]);

  it("reports every status, zero when absent", () => {
    expect(statusCounts([])).toEqual({ new: 0, reviewed: 0, actioned: 0, archived: 0 });
    expect(statusCounts(cells)).toEqual({ new: 5, reviewed: 1, actioned: 0, archived: 5 });
  });

  it("merges template counts across agents and statuses, largest first, then by name", () => {
    expect(typeCounts(cells)).toEqual([
      { template_id: null, template_name: "Import", count: 5 },
      { template_id: 10, template_name: "Lead", count: 5 },
      { template_id: 11, template_name: "Ticket", count: 1 },
    ]);
    expect(typeCounts([{ ...cells[0]!, count: 0 }])).toEqual([]);
  });

  it("builds StatsRead", () => {
    expect(statsRead(cells, names, 30)).toEqual({
      total: 11,
      status_counts: { new: 5, reviewed: 1, actioned: 0, archived: 5 },
      type_counts: [
        { template_id: null, template_name: "Import", count: 5 },
        { template_id: 10, template_name: "Lead", count: 5 },
        { template_id: 11, template_name: "Ticket", count: 1 },
      ],
      agent_counts: [
        { agent_id: 2, agent_name: "Beta", count: 7 },
        { agent_id: 1, agent_name: "Alpha", count: 4 },
      ],
      period_days: 30,
    });
    expect(statsRead([], names, null)).toEqual({
      total: 0,
      status_counts: { new: 0, reviewed: 0, actioned: 0, archived: 0 },
      type_counts: [],
      agent_counts: [],
      period_days: null,
    });
  });

  it("builds StatsByAgentRead", () => {
    expect(statsByAgentRead(cells, names, null)).toEqual({
      agents: [
        {
          agent_id: 2,
          agent_name: "Beta",
          status_counts: { new: 2, reviewed: 0, actioned: 0, archived: 5 },
          type_counts: [
            { template_id: null, template_name: "Import", count: 5 },
            { template_id: 10, template_name: "Lead", count: 2 },
          ],
          total: 7,
        },
        {
          agent_id: 1,
          agent_name: "Alpha",
          status_counts: { new: 3, reviewed: 1, actioned: 0, archived: 0 },
          type_counts: [
            { template_id: 10, template_name: "Lead", count: 3 },
            { template_id: 11, template_name: "Ticket", count: 1 },
          ],
          total: 4,
        },
      ],
      total: 11,
      period_days: null,
    });
  });

  it("builds EntityFacets from one count: types keep the status filter, statuses keep the template filter", () => {
    const facetCells: FacetCell[] = [
      { status: "new", template_key: "lead", template_id: 10, template_name: "Lead", count: 5 },
      { status: "reviewed", template_key: "ticket", template_id: 11, template_name: "Ticket", count: 1 },
      { status: "new", template_key: "ticket", template_id: 11, template_name: "Ticket", count: 2 },
      { status: "archived", template_key: "lead", template_id: 10, template_name: "Lead", count: 4 },
    ];
    const unfiltered = facetsRead(facetCells, resolved({}));
    expect(unfiltered.entity_types).toEqual([
      { template_id: 10, template_name: "Lead", count: 9 },
      { template_id: 11, template_name: "Ticket", count: 3 },
    ]);
    expect(unfiltered.statuses).toEqual({ new: 7, reviewed: 1, actioned: 0, archived: 4 });
    const filtered = facetsRead(facetCells, resolved({ status: "new", template_name: "Lead" }, "lead"));
    expect(filtered.entity_types).toEqual([
      { template_id: 10, template_name: "Lead", count: 5 },
      { template_id: 11, template_name: "Ticket", count: 2 },
    ]);
    expect(filtered.statuses).toEqual({ new: 5, reviewed: 0, actioned: 0, archived: 4 });
  });
});

describe("helpers", () => {
  it("previews a bulk delete without deleting", () => {
    expect(deletionPreview(1)).toEqual({ count: 1, warning: expect.stringContaining("1 collected data record;"), confirm_instruction: expect.stringContaining("confirmed=true") });
    expect(deletionPreview(3).warning).toContain("3 collected data records");
  });
});
