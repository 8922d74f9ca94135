import type { Connection, Model } from "mongoose";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { claimJob, earlierWriterRunning, enqueueJob, finishJob } from "../../services/knowledge/jobs";
import { loadJobModel, type LoadJobRecord } from "../../services/knowledge/model";
import { databaseUrl } from "../harness/servers";

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
    db = await connectDatabase(databaseUrl(process.env.TEST_MONGO_URL!, "rechunk_jobs"));
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
    expect(await earlierWriterRunning(jobs, successor)).toBe(true);
    expect(await earlierWriterRunning(jobs, running!)).toBe(false);
    // Another source's re-chunk does not wait.
    const other = await enqueueJob(jobs, { kind: "rechunk", account_id: 7, knowledge_source_id: 4 });
    expect(await earlierWriterRunning(jobs, await read(other.job))).toBe(false);

    await finishJob(jobs, running!, "loader-a", { status: "done" });
    expect(await earlierWriterRunning(jobs, successor)).toBe(false);
  });

  it("a load and a re-chunk of one source never run at once; other sources' jobs and the source's deletion still start", async () => {
    const s = { account_id: 9, knowledge_source_id: 1 };
    const rechunk = await enqueueJob(jobs, { kind: "rechunk", ...s });
    const load = await enqueueJob(jobs, { kind: "load", ...s });
    const elsewhere = await enqueueJob(jobs, { kind: "load", account_id: 9, knowledge_source_id: 2 });
    const running = await claimJob(jobs, "loader-c", 60_000, ["rechunk", "load"], [7, 8]);
    expect(running!._id).toBe(rechunk.job._id);
    // The load of the busy source is passed over; the other source's load is not.
    expect((await claimJob(jobs, "loader-d", 60_000, ["rechunk", "load"], [7, 8]))!._id).toBe(elsewhere.job._id);
    expect(await claimJob(jobs, "loader-d", 60_000, ["rechunk", "load"], [7, 8])).toBeNull();
    const deletion = await enqueueJob(jobs, { kind: "delete-source", ...s });
    expect((await claimJob(jobs, "loader-d", 60_000, ["delete-source"], [7, 8]))!._id).toBe(deletion.job._id);
    // Two loaders that claimed at one moment: the later job waits for the earlier.
    await jobs.updateOne({ _id: load.job._id, account_id: 9 }, { $set: { status: "running", lease_owner: "loader-e", lease_expires_at: new Date(Date.now() + 60_000) } });
    expect(await earlierWriterRunning(jobs, await read(load.job))).toBe(true);
    expect(await earlierWriterRunning(jobs, running!)).toBe(false);
    await finishJob(jobs, running!, "loader-c", { status: "done" });
    expect(await earlierWriterRunning(jobs, await read(load.job))).toBe(false);
  });

  it("a successor stops waiting for an earlier one whose loader died (its lease ran out)", async () => {
    const s = { account_id: 8, knowledge_source_id: 1 };
    await enqueueJob(jobs, { kind: "rechunk", ...s });
    const dead = await claimJob(jobs, "loader-b", 60_000, ["rechunk"], [7]);
    const next = await enqueueJob(jobs, { kind: "rechunk", ...s });
    const waiting = await read(next.job);
    expect(await earlierWriterRunning(jobs, waiting)).toBe(true);
    await jobs.updateOne({ _id: dead!._id, account_id: 8 }, { $set: { lease_expires_at: new Date(Date.now() - 1000) } });
    expect(await earlierWriterRunning(jobs, waiting)).toBe(false);
  });
});
