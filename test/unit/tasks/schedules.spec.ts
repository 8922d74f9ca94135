import { canonicalTimezone, cronProblem, nextOccurrence, nextRunAt, timingFields } from "../../../lib/cron";
import { describeRunError } from "../../../services/tasks/scheduled-runs";

/** Wall-clock parts of an instant in a zone, computed with Intl rather than the code under test. */
function wallClock(at: Date, timeZone: string) {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
  }).formatToParts(at);
  const part = (type: string) => parts.find((p) => p.type === type)!.value;
  return `${part("weekday")} ${part("hour")}:${part("minute")}:${part("second")}`;
}

describe("cron expressions", () => {
  it("accepts 5 fields, and 6 with seconds first", () => {
    expect(cronProblem("0 9 * * 1-5")).toBeNull();
    expect(cronProblem("30 */1 * * * *")).toBeNull();
    expect(cronProblem("  0   9 * * MON  ")).toBeNull();
    expect(cronProblem("0 0 1,15 * *")).toBeNull();
  });

  it("refuses an expression that can fire more than once a minute (several seconds in a minute)", () => {
    for (const expression of ["* * * * * *", "*/1 * * * * *", "*/15 * * * * *", "0,59 * * * * *", "0-1 0 3 * * *"]) {
      expect(cronProblem(expression)).toMatch(/fires more than once a minute .*at most once a minute/);
    }
    expect(cronProblem("59 * * * * *")).toBeNull();
    expect(cronProblem("* * * * *")).toBeNull();
  });

  it("refuses Jenkins' H, which cron-parser draws anew at each read, and keeps the day names that hold an H", () => {
    for (const expression of ["H * * * * *", "H-H * * * * *", "H H * * *", "0 H(0-29) * * *", "H/30 * * * *", "0 0 * * h"]) {
      expect(cronProblem(expression)).toMatch(/H \(a hashed value\) is not supported/);
    }
    expect(cronProblem("0 9 * * THU")).toBeNull();
    expect(cronProblem("0 9 * * MON-THU")).toBeNull();
  });

  it("refuses other field counts, out-of-range values, garbage and impossible dates with a readable message", () => {
    expect(cronProblem("* * * *")).toMatch(/expected 5 fields .* got 4/);
    expect(cronProblem("* * * * * * *")).toMatch(/got 7/);
    expect(cronProblem("")).toMatch(/got 0/);
    expect(cronProblem("@daily")).toMatch(/got 1/);
    expect(cronProblem("61 * * * *")).toMatch(/^Invalid cron expression: .*61/);
    expect(cronProblem("a b c d e")).toMatch(/^Invalid cron expression: /);
    expect(cronProblem("0 0 30 2 *")).toMatch(/^Invalid cron expression: /);
  });

  it("computes the first occurrence strictly after the given instant", () => {
    const at = new Date("2026-01-01T00:00:05.000Z");
    expect(nextOccurrence("* * * * * *", "UTC", at).toISOString()).toBe("2026-01-01T00:00:06.000Z");
    expect(nextOccurrence("* * * * * *", "UTC", new Date("2026-01-01T00:00:05.400Z")).toISOString()).toBe("2026-01-01T00:00:06.000Z");
    expect(nextOccurrence("*/15 * * * *", "UTC", at).toISOString()).toBe("2026-01-01T00:15:00.000Z");
    // 2026-01-01 is a Thursday; weekdays at 09:00 UTC.
    expect(nextOccurrence("0 9 * * 1-5", "UTC", at).toISOString()).toBe("2026-01-01T09:00:00.000Z");
  });

  it("reads the expression in the schedule's time zone, across daylight-saving changes", () => {
    // Berlin switches to summer time on 2026-03-29: 07:30 local is 06:30Z before and 05:30Z after.
    const before = nextOccurrence("30 7 * * *", "Europe/Berlin", new Date("2026-03-27T12:00:00Z"));
    const after = nextOccurrence("30 7 * * *", "Europe/Berlin", new Date("2026-03-29T12:00:00Z"));
    expect(before.toISOString()).toBe("2026-03-28T06:30:00.000Z");
    expect(after.toISOString()).toBe("2026-03-30T05:30:00.000Z");
    for (const at of [before, after]) expect(wallClock(at, "Europe/Berlin").slice(4)).toBe("07:30:00");
    const tokyo = nextOccurrence("0 9 * * MON", "Asia/Tokyo", new Date("2026-06-01T12:00:00Z"));
    expect(wallClock(tokyo, "Asia/Tokyo")).toBe("Mon 09:00:00");
  });

  it("a disabled schedule has no next run; an overdue one runs next after now, never replaying missed slots", () => {
    const now = new Date("2026-05-05T10:17:30Z");
    expect(nextRunAt({ schedule: "0 * * * *", timezone: "UTC", enabled: false }, now)).toBeNull();
    expect(nextRunAt({ schedule: "0 * * * *", timezone: "UTC", enabled: true }, now)!.toISOString()).toBe("2026-05-05T11:00:00.000Z");
  });
});

describe("time zones", () => {
  it("accepts IANA names in any case and stores the canonical spelling", () => {
    expect(canonicalTimezone("UTC")).toBe("UTC");
    expect(canonicalTimezone("utc")).toBe("UTC");
    expect(canonicalTimezone("europe/berlin")).toBe("Europe/Berlin");
    expect(canonicalTimezone(" America/New_York ")).toBe("America/New_York");
    // Backward-compatible IANA links stay as given.
    expect(canonicalTimezone("US/Pacific")).toBe("US/Pacific");
  });

  it("refuses unknown names and UTC offsets", () => {
    expect(canonicalTimezone("Mars/Phobos")).toBeNull();
    expect(canonicalTimezone("+01:00")).toBeNull();
    expect(canonicalTimezone("-05")).toBeNull();
    expect(canonicalTimezone("Z")).toBeNull();
    expect(canonicalTimezone("")).toBeNull();
  });
});

describe("schedule timing fields", () => {
  it("normalizes what is given and reports one problem per bad field", () => {
    expect(timingFields({})).toEqual({ fields: {}, problems: [] });
    expect(timingFields({ schedule: " 0  9 * * * ", timezone: "europe/paris" })).toEqual({
      fields: { schedule: "0 9 * * *", timezone: "Europe/Paris" },
      problems: [],
    });
    const bad = timingFields({ schedule: "nope", timezone: "Nowhere" });
    expect(bad.fields).toEqual({});
    expect(bad.problems.map((p) => [p.field, p.type])).toEqual([
      ["schedule", "cron"],
      ["timezone", "timezone"],
    ]);
  });
});

describe("run errors", () => {
  it("lists validation problems, else uses the message", () => {
    expect(describeRunError({ message: "Parameters validation error!", data: [{ message: "No agent 4 in this account" }, { field: "team_id" }] })).toBe(
      "No agent 4 in this account; team_id",
    );
    expect(describeRunError(new Error("Service 'tasks' is not available"))).toBe("Service 'tasks' is not available");
    expect(describeRunError(undefined)).toBe("Task creation failed");
  });
});
