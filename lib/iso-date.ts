const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A date written in ISO 8601: RFC 3339's date-time (`T`, `t` or a space before the time, seconds and fraction
 * optional, offset `Z`, `±hh:mm` or `±hhmm`) or a date alone. A date-time without an offset is UTC, and a date alone
 * UTC midnight, whatever the server's time zone (Date's own parser reads the former as local time). An Invalid Date
 * for anything else, a day its month does not have included (Date would roll 30 February over into March).
 */
export function isoDate(value: unknown): Date {
  const m = typeof value === "string" ? ISO_DATE_TIME.exec(value) : null;
  if (!m) return new Date(NaN);
  const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = "", offset = "Z"] = m;
  if (Number(day) > new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate()) return new Date(NaN);
  const zone = offset.toUpperCase() === "Z" ? "Z" : offset.length === 5 ? `${offset.slice(0, 3)}:${offset.slice(3)}` : offset;
  return new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${zone}`);
}
