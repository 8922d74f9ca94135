import { NAMING_WAIT_MS, rechunkStart } from "../../../services/knowledge-loader/rechunk";

describe("rechunkStart: a re-chunk's first window starts once its source names it", () => {
  const created = new Date("2026-11-28T12:00:00Z");
  const job = { _id: "rechunk_b", created_at: created };
  const at = (ms: number) => created.getTime() + ms;

  it("starts when the source names the job", () => {
    expect(rechunkStart(job, { job_id: "rechunk_b", queued_at: new Date(at(5)) }, at(10))).toBe("start");
  });

  it("waits while the request that queued it has not saved the source (no job named, or an earlier one)", () => {
    expect(rechunkStart(job, null, at(10))).toBe("wait");
    expect(rechunkStart(job, { job_id: "rechunk_a", queued_at: new Date(at(-60_000)) }, at(NAMING_WAIT_MS - 1))).toBe("wait");
  });

  it("is superseded when the source names a job queued after it", () => {
    expect(rechunkStart(job, { job_id: "rechunk_c", queued_at: new Date(at(1)) }, at(10))).toBe("superseded");
  });

  it("gives up when nothing names it for NAMING_WAIT_MS (the request failed after queueing it)", () => {
    expect(rechunkStart(job, null, at(NAMING_WAIT_MS))).toBe("unnamed");
    expect(rechunkStart(job, { job_id: "rechunk_a", queued_at: new Date(at(-1)) }, at(NAMING_WAIT_MS + 1))).toBe("unnamed");
  });
});
