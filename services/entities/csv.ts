import { finished, Readable } from "node:stream";
import type { EntityRecord } from "./types";

/** The columns every export has, in order; one `attributes.<key>` column per attribute key follows. */
export const FIXED_COLUMNS = [
  "id",
  "created_at",
  "status",
  "entity_type_name",
  "agent_id",
  "agent_name",
  "confidence_score",
  "display_name",
  "contact_email",
  "contact_phone",
  "display_summary",
  "session_channel",
] as const;

/** The record fields an export reads: the fixed columns' and the attributes. */
export const EXPORT_FIELDS = [...FIXED_COLUMNS.filter((column) => column !== "id"), "attributes"] as const;

/** Rows are sent in pieces of about this many characters rather than one message per row. */
const CHUNK_CHARS = 64 * 1024;
/** Spreadsheets run text starting with these as a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

type ExportRow = Pick<EntityRecord, "_id" | "attributes" | (typeof FIXED_COLUMNS)[number] & keyof EntityRecord>;

/**
 * One CSV field (RFC 4180): empty for null, ISO 8601 for dates, JSON for nested values; text that a
 * spreadsheet would run as a formula gets a leading apostrophe; quoted when it holds a comma, quote or line break.
 */
export function csvCell(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = "";
  else if (value instanceof Date) text = value.toISOString();
  else if (typeof value === "string") text = FORMULA_START.test(value) ? `'${value}` : value;
  else if (typeof value === "object") text = JSON.stringify(value);
  else text = String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV record with its CRLF terminator. */
export function csvLine(cells: unknown[]): string {
  return cells.map(csvCell).join(",") + "\r\n";
}

/** The header row's names for the given attribute keys. */
export function csvHeader(attributeKeys: readonly string[]): string[] {
  return [...FIXED_COLUMNS, ...attributeKeys.map((k) => `attributes.${k}`)];
}

/** A record's cells in header order; attributes it lacks are empty. */
export function csvRow(row: ExportRow, attributeKeys: readonly string[]): unknown[] {
  const fixed = FIXED_COLUMNS.map((column) => (column === "id" ? row._id : row[column]));
  return [...fixed, ...attributeKeys.map((k) => (Object.hasOwn(row.attributes ?? {}, k) ? row.attributes[k] : null))];
}

/** The whole export as text chunks: header first, then the rows as they are read. */
export async function* csvDocument(attributeKeys: readonly string[], rows: AsyncIterable<ExportRow>): AsyncGenerator<string> {
  let chunk = csvLine(csvHeader(attributeKeys));
  for await (const row of rows) {
    chunk += csvLine(csvRow(row, attributeKeys));
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = "";
    }
  }
  if (chunk) yield chunk;
}

/**
 * The export as a stream of text chunks, reading `rows` (the database cursor) as chunks are taken. Destroying it
 * (the HTTP client went away, on this node or on the gateway's) destroys `rows`: the cursor is closed on the
 * database at once instead of being read to its end.
 */
export function csvStream(attributeKeys: readonly string[], rows: Readable & AsyncIterable<ExportRow>): Readable {
  const chunks = csvDocument(attributeKeys, rows);
  return new Readable({
    // Text chunks as they are (a moleculer stream sends them as strings); one read ahead, as Readable.from does.
    objectMode: true,
    highWaterMark: 1,
    read() {
      chunks.next().then(({ done, value }) => this.push(done ? null : value), (err: Error) => this.destroy(err));
    },
    destroy(err, callback) {
      // Closed once the cursor is (a row read still in flight then fails, unreported); a cursor that fails to close
      // is left to the database's idle-cursor timeout.
      rows.destroy();
      finished(rows, () => callback(err));
    },
  });
}

/** The download's file name, dated (UTC) so repeated exports do not overwrite each other. */
export function exportFilename(now: Date): string {
  return `collected-data-${now.toISOString().slice(0, 10)}.csv`;
}
