import type { Connection, Model } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { claimJob, earlierRechunkRunning, enqueueJob, finishJob } from "../../services/knowledge/jobs";
import { loadJobModel, type LoadJobRecord } from "../../services/knowledge/model";

/**
 * The queue rules that make the last chunking change the last one applied (docs/adr/0059-chunking-per-source.md),
 * on the real local server: a change while a re-chunk is pending reuses it; a change while one runs queues a
 * successor, which sees the earlier one running until it ends or its lease runs out.
 */
describe("re-chunk jobs of one source", () => {
  let db: Connection;
  let jobs: Model<LoadJobRecord>;
  const source = { account_id: 7, knowledge_source_id: 3 };
  const read = (job: Pick<LoadJobRecord, "_id" | "account_id">) => jobs.findOne({ _id: job._id, account_id: job.account_id }).lean<LoadJobRecord>() as Promise<LoadJobRecord>;

  beforeAll(async () => {
    const url = new URL(process.env.TEST_MONGO_URL!);
    url.pathname = "/rechunk_jobs";
    db = await connectDatabase(url.toString());
    await db.dropDatabase();
    jobs = loadJobModel(db);
  });
  afterAll(() => closeAllDatabases());

  it("a change while one is pending reuses it; while one runs, queues a successor that waits for it", async () => {
    const first = await enqueueJob(jobs, { kind: "rechunk", ...source });
    expect(first).toMatchObject({ created: true, job: { _id: expect.stringMatching(/^rechunk_/), status: "pending" } });
    expect(await enqueueJob(jobs, { kind: "rechunk", ...source })).toMatchObject({ created: false, job: { _id: first.job._id } });
    // A load of the same source is queued beside it.
    expect((await enqueueJob(jobs, { kind: "load", ...source })).created).toBe(true);

    const running = await claimJob(jobs, "loader-a", 60_000, ["rechunk"]);
    expect(running!._id).toBe(first.job._id);
    const second = await enqueueJob(jobs, { kind: "rechunk", ...source });
    expect(second.created).toBe(true);
    const successor = await read(second.job);
    expect(await earlierRechunkRunning(jobs, successor)).toBe(true);
    expect(await earlierRechunkRunning(jobs, running!)).toBe(false);
    // Another source's re-chunk does not wait.
    const other = await enqueueJob(jobs, { kind: "rechunk", account_id: 7, knowledge_source_id: 4 });
    expect(await earlierRechunkRunning(jobs, await read(other.job))).toBe(false);

    await finishJob(jobs, running!, "loader-a", { status: "done" });
    expect(await earlierRechunkRunning(jobs, successor)).toBe(false);
  });

  it("a successor stops waiting for an earlier one whose loader died (its lease ran out)", async () => {
    const s = { account_id: 8, knowledge_source_id: 1 };
    await enqueueJob(jobs, { kind: "rechunk", ...s });
    const dead = await claimJob(jobs, "loader-b", 60_000, ["rechunk"], [7]);
    const next = await enqueueJob(jobs, { kind: "rechunk", ...s });
    const waiting = await read(next.job);
    expect(await earlierRechunkRunning(jobs, waiting)).toBe(true);
    await jobs.updateOne({ _id: dead!._id, account_id: 8 }, { $set: { lease_expires_at: new Date(Date.now() - 1000) } });
    expect(await earlierRechunkRunning(jobs, waiting)).toBe(false);
  });
});
