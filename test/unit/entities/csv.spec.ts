import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { csvCell, csvDocument, csvHeader, csvLine, csvRow, csvStream, exportFilename, FIXED_COLUMNS } from "../../../services/entities/csv";
import type { EntityRecord } from "../../../services/entities/types";
import { parseCsv } from "./parse-csv";

const record = (overrides: Partial<EntityRecord> = {}) =>
  ({
    _id: 7,
    created_at: new Date("2026-11-01T10:00:00.000Z"),
    status: "new",
    entity_type_name: "Lead",
    agent_id: 3,
    agent_name: "Sales bot",
    confidence_score: 0.9,
    display_name: "Ada",
    contact_email: "ada@example.com",
    contact_phone: null,
    display_summary: null,
    session_channel: "web",
    attributes: { name: "Ada", budget: 1200 },
    ...overrides,
  }) as EntityRecord;

describe("csvCell", () => {
  it.each([
    [null, ""],
    [undefined, ""],
    ["plain", "plain"],
    [42, "42"],
    [-3, "-3"],
    [true, "true"],
    [new Date("2026-01-02T03:04:05.000Z"), "2026-01-02T03:04:05.000Z"],
    ["a,b", '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ["two\nlines", '"two\nlines"'],
    ["cr\rlf", '"cr\rlf"'],
    [{ a: 1 }, '"{""a"":1}"'],
    [["x", "y"], '"[""x"",""y""]"'],
  ])("%j -> %j", (value, cell) => expect(csvCell(value)).toBe(cell));

  it.each([
    ["=SUM(A1:A2)", "'=SUM(A1:A2)"],
    ["+1", "'+1"],
    ["-1+2", "'-1+2"],
    ["@cmd", "'@cmd"],
    ["\tTAB", "'\tTAB"],
    ["\rCR", "\"'\rCR\""],
    ['=HYPERLINK("http://x","y")', '"\'=HYPERLINK(""http://x"",""y"")"'],
  ])("neutralises a formula: %j -> %j", (value, cell) => expect(csvCell(value)).toBe(cell));

  it("leaves numbers alone: a negative number is data, not a formula", () => {
    expect(csvCell(-5)).toBe("-5");
  });
});

describe("csv rows", () => {
  it("has the fixed columns, then one attributes.<key> column per key in the given order", () => {
    expect(csvHeader(["budget", "name"])).toEqual([...FIXED_COLUMNS, "attributes.budget", "attributes.name"]);
    expect(FIXED_COLUMNS[0]).toBe("id");
    expect(FIXED_COLUMNS).toHaveLength(12);
  });

  it("puts a record's values in header order; missing attributes are empty", () => {
    expect(csvRow(record(), ["budget", "missing", "name"])).toEqual([
      7, record().created_at, "new", "Lead", 3, "Sales bot", 0.9, "Ada", "ada@example.com", null, null, "web", 1200, null, "Ada",
    ]);
  });

  it("ends every line with CRLF", () => {
    expect(csvLine(["a", "b,c", null])).toBe('a,"b,c",\r\n');
  });

  it("streams a document that parses back to the same values", async () => {
    async function* rows() {
      yield record();
      yield record({ _id: 8, attributes: { note: 'He said "call me, maybe"\nthen left', name: "=1+1" }, display_name: null });
    }
    let text = "";
    for await (const chunk of csvDocument(["budget", "name", "note"], rows())) text += chunk;
    const parsed = parseCsv(text);
    expect(parsed).toHaveLength(3);
    expect(parsed[0]).toEqual(csvHeader(["budget", "name", "note"]));
    expect(parsed[1]).toEqual(["7", "2026-11-01T10:00:00.000Z", "new", "Lead", "3", "Sales bot", "0.9", "Ada", "ada@example.com", "", "", "web", "1200", "Ada", ""]);
    expect(parsed[2]!.slice(-3)).toEqual(["", "'=1+1", 'He said "call me, maybe"\nthen left']);
  });

  it("sends large exports in several chunks", async () => {
    async function* rows() {
      for (let i = 0; i < 2000; i++) yield record({ _id: i + 1, display_summary: "s".repeat(100) });
    }
    const chunks: string[] = [];
    for await (const chunk of csvDocument([], rows())) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(parseCsv(chunks.join(""))).toHaveLength(2001);
  });

  it("streams the document, and stops reading its rows when destroyed", async () => {
    const all = Readable.from(Array.from({ length: 3 }, (_, i) => record({ _id: i + 1 })));
    let text = "";
    for await (const chunk of csvStream([], all)) text += chunk;
    expect(parseCsv(text)).toHaveLength(4);

    let read = 0;
    const endless = Readable.from((function* () {
      for (;;) yield record({ _id: ++read, display_summary: "s".repeat(1000) });
    })());
    const stream = csvStream([], endless);
    await new Promise((resolve) => stream.once("data", resolve));
    stream.destroy();
    await finished(endless).catch(() => {});
    const readWhenDestroyed = read;
    await new Promise((r) => setTimeout(r, 50));
    expect(endless.destroyed).toBe(true);
    expect(read).toBe(readWhenDestroyed);
  });

  it("dates the file name in UTC", () => {
    expect(exportFilename(new Date("2026-11-23T23:59:00.000Z"))).toBe("collected-data-2026-11-23.csv");
  });
});
