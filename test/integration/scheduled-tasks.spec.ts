import mongoose, { type Connection } from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled } from "../harness/wait";

const CORE = ["users", "api-keys", "agents", "teams", "tasks"];

/** The wall-clock hour and minute of an instant in a time zone, computed with Intl (independently of cron-parser). */
function localTime(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(iso));
}

describe("scheduled tasks over NATS, with two scheduler replicas", () => {
  let cluster: Cluster;
  let api: Api;
  let db: Connection;
  let token: string;
  let other: string;

  beforeAll(async () => {
    // Two schedulers on two brokers race for every occurrence.
    // Schedulers look for due schedules every 100 ms here, so an occurrence a test makes due runs at once.
    cluster = await startCluster({ database: "scheduled_tasks", env: { SCHEDULER_POLL_MS: "100" }, nodes: [["gateway"], CORE, ["scheduler"], ["scheduler"]] });
    api = apiClient(cluster.baseUrl);
    db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    token = (await signup(api, "schedules")).token;
    other = (await signup(api, "schedules-intruder")).token;
  });
  afterAll(async () => {
    await db?.close();
    await cluster?.stop();
  });

  const post = (path: string, body?: unknown, t = token) => api("POST", `/api/v1${path}`, { token: t, body });
  const get = (path: string, t = token) => api("GET", `/api/v1${path}`, { token: t });
  const put = (path: string, body: unknown, t = token) => api("PUT", `/api/v1${path}`, { token: t, body });
  const del = (path: string, t = token) => api("DELETE", `/api/v1${path}`, { token: t });
  const locs = (body: { detail: { loc: (string | number)[]; msg: string }[] }) => body.detail.map((d) => d.loc.join("."));
  const tasksOfType = async (taskType: string) => (await get(`/tasks?task_type=${taskType}&limit=1000`)).body as Record<string, any>[];
  const waitFor = async <T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> => {
    const deadline = Date.now() + scaled(timeoutMs);
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > deadline) return value;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const later = { name: "Weekly digest", schedule: "0 9 * * 1", task_template: { title: "Write the digest" } };

  describe("CRUD", () => {
    it("creates a schedule with defaults and a computed next_run_at; read-only fields are ignored, unknown template keys refused", async () => {
      const before = Date.now();
      const res = await post("/scheduled-tasks", {
        ...later,
        next_run_at: "2000-01-01T00:00:00Z",
        run_count: 99,
        task_template: { title: "Write the digest", task_type: "digest", priority: "high" },
      });
      expect(res.status).toBe(201);
      expect(res.headers.get("location")).toBe(`/api/v1/scheduled-tasks/${res.body.id}`);
      expect(res.body).toEqual({
        id: expect.any(Number),
        account_id: expect.any(Number),
        name: "Weekly digest",
        description: null,
        schedule: "0 9 * * 1",
        timezone: "UTC",
        enabled: true,
        task_template: { title: "Write the digest", task_type: "digest", priority: "high" },
        next_run_at: expect.any(String),
        last_run_at: null,
        last_task_id: null,
        last_error: null,
        run_count: 0,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const next = new Date(res.body.next_run_at);
      expect(next.getTime()).toBeGreaterThan(before);
      expect(next.getTime() - before).toBeLessThanOrEqual(7 * 24 * 3600 * 1000);
      expect([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([1, 9, 0, 0]);
      const typo = await post("/scheduled-tasks", { ...later, task_template: { title: "Digest", status: "completed", colour: "red" } });
      expect(typo.status).toBe(422);
      expect(typo.body.detail[0]).toMatchObject({ loc: ["body", "task_template"], type: "objectStrict" });
      expect(typo.body.detail[0].msg).toMatch(/^Unknown fields: status, colour; /);
    });

    it("reads, updates (recomputing next_run_at only for timing changes) and deletes a schedule", async () => {
      const created = (await post("/scheduled-tasks", later)).body;
      expect((await get(`/scheduled-tasks/${created.id}`)).body).toEqual(created);

      const renamed = (await put(`/scheduled-tasks/${created.id}`, { name: "Renamed", description: "Mondays" })).body;
      expect(renamed).toMatchObject({ name: "Renamed", description: "Mondays", schedule: "0 9 * * 1", next_run_at: created.next_run_at });

      const berlin = (await put(`/scheduled-tasks/${created.id}`, { schedule: "30 7 * * *", timezone: "europe/berlin" })).body;
      expect(berlin.timezone).toBe("Europe/Berlin");
      expect(localTime(berlin.next_run_at, "Europe/Berlin")).toBe("07:30");
      expect(new Date(berlin.next_run_at).getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);

      const disabled = (await put(`/scheduled-tasks/${created.id}`, { enabled: false })).body;
      expect(disabled).toMatchObject({ enabled: false, next_run_at: null });
      const enabled = (await put(`/scheduled-tasks/${created.id}`, { enabled: true })).body;
      expect(enabled.next_run_at).toBe(berlin.next_run_at);

      const template = (await put(`/scheduled-tasks/${created.id}`, { task_template: { title: "New title" } })).body;
      expect(template.task_template).toEqual({ title: "New title" });

      expect((await del(`/scheduled-tasks/${created.id}`)).status).toBe(204);
      expect((await get(`/scheduled-tasks/${created.id}`)).status).toBe(404);
      expect((await del(`/scheduled-tasks/${created.id}`)).status).toBe(404);
    });

    it("accepts 5- and 6-field expressions and refuses invalid ones with 422 and a clear message", async () => {
      expect((await post("/scheduled-tasks", { ...later, schedule: "30 */5 * * * *" })).status).toBe(201);
      expect((await post("/scheduled-tasks", { ...later, schedule: "0 9 * * MON-FRI" })).status).toBe(201);
      for (const schedule of ["not a cron", "61 * * * *", "* * * *", "* * * * * * *", "0 0 30 2 *", ""]) {
        const res = await post("/scheduled-tasks", { ...later, schedule });
        expect(res.status).toBe(422);
        expect(locs(res.body)).toEqual(["body.schedule"]);
      }
      const range = await post("/scheduled-tasks", { ...later, schedule: "61 * * * *" });
      expect(range.body.detail[0].msg).toMatch(/^Invalid cron expression: .*61/);
      const fields = await post("/scheduled-tasks", { ...later, schedule: "* * * *" });
      expect(fields.body.detail[0].msg).toMatch(/5 fields .* or 6 with seconds first, got 4/);
    });

    it("refuses a schedule that can fire more than once a minute (422), the documented minimum", async () => {
      for (const schedule of ["* * * * * *", "*/15 * * * * *", "0,59 * * * * *"]) {
        const res = await post("/scheduled-tasks", { ...later, schedule });
        expect(res.status).toBe(422);
        expect(res.body.detail[0]).toMatchObject({ loc: ["body", "schedule"], msg: expect.stringMatching(/at most once a minute/) });
      }
      const { body } = await post("/scheduled-tasks", later);
      const update = await put(`/scheduled-tasks/${body.id}`, { schedule: "*/2 * * * * *" });
      expect(update.status).toBe(422);
      expect((await get(`/scheduled-tasks/${body.id}`)).body.schedule).toBe(later.schedule);
    });

    it("refuses unknown time zones and UTC offsets (422)", async () => {
      for (const timezone of ["Mars/Phobos", "+01:00", "Z", ""]) {
        const res = await post("/scheduled-tasks", { ...later, timezone });
        expect(res.status).toBe(422);
        expect(locs(res.body)).toEqual(["body.timezone"]);
      }
      const { body } = await post("/scheduled-tasks", { ...later });
      const bad = await put(`/scheduled-tasks/${body.id}`, { timezone: "Nowhere/Special", schedule: "bad" });
      expect(bad.status).toBe(422);
      expect(locs(bad.body).sort()).toEqual(["body.schedule", "body.timezone"]);
    });

    it("takes a null time zone as not given, on create and update (schemathesis found a 500)", async () => {
      const created = await post("/scheduled-tasks", { ...later, timezone: null });
      expect(created.status).toBe(201);
      expect(created.body.timezone).toBe("UTC");
      const updated = await put(`/scheduled-tasks/${created.body.id}`, { timezone: null, schedule: null, name: null });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ timezone: "UTC", schedule: created.body.schedule, name: created.body.name });
    });

    it("requires name, schedule and a template with a title; validates the template's team and agent", async () => {
      const missing = await post("/scheduled-tasks", {});
      expect(missing.status).toBe(422);
      expect(locs(missing.body).sort()).toEqual(["body.name", "body.schedule", "body.task_template"]);
      const noTitle = await post("/scheduled-tasks", { ...later, task_template: { description: "x" } });
      expect(locs(noTitle.body)).toEqual(["body.task_template.title"]);
      const badEnum = await post("/scheduled-tasks", { ...later, task_template: { title: "x", priority: "critical" } });
      expect(locs(badEnum.body)).toEqual(["body.task_template.priority"]);
      const unknown = await post("/scheduled-tasks", { ...later, task_template: { title: "x", team_id: 999_999, agent_id: 999_998 } });
      expect(unknown.status).toBe(422);
      expect(locs(unknown.body).sort()).toEqual(["body.task_template.agent_id", "body.task_template.team_id"]);
      const team = (await post("/teams", { name: "Schedulers" })).body;
      expect((await post("/scheduled-tasks", { ...later, task_template: { title: "x", team_id: team.id } })).status).toBe(201);
      expect((await post("/scheduled-tasks", { ...later, task_template: { title: "x", team_id: team.id } }, other)).status).toBe(422);
      expect((await post("/scheduled-tasks", { ...later, name: "x".repeat(256) })).status).toBe(422);
      expect((await post("/scheduled-tasks", { ...later, enabled: "sometimes" })).status).toBe(422);
    });

    it("lists schedules paginated, newest first, limit 1..200", async () => {
      const fresh = await signup(api, "schedules-pages");
      for (const name of ["one", "two", "three"]) await post("/scheduled-tasks", { ...later, name }, fresh.token);
      const page = await get("/scheduled-tasks?limit=2", fresh.token);
      expect(page.status).toBe(200);
      expect(page.body.pagination).toEqual({ total: 3, skip: 0, limit: 2, has_more: true });
      expect(page.body.data.map((s: { name: string }) => s.name)).toEqual(["three", "two"]);
      const rest = await get("/scheduled-tasks?skip=2", fresh.token);
      expect(rest.body.pagination).toEqual({ total: 3, skip: 2, limit: 50, has_more: false });
      expect(rest.body.data.map((s: { name: string }) => s.name)).toEqual(["one"]);
      expect((await get("/scheduled-tasks?limit=201", fresh.token)).status).toBe(422);
      expect((await get("/scheduled-tasks?limit=0", fresh.token)).status).toBe(422);
      expect((await get("/scheduled-tasks?skip=-1", fresh.token)).status).toBe(422);
    });

    it("answers 403 for another account's schedule and never lists it", async () => {
      const { body } = await post("/scheduled-tasks", later);
      expect((await get(`/scheduled-tasks/${body.id}`, other)).status).toBe(403);
      expect((await put(`/scheduled-tasks/${body.id}`, { name: "mine" }, other)).status).toBe(403);
      expect((await del(`/scheduled-tasks/${body.id}`, other)).status).toBe(403);
      expect((await get("/scheduled-tasks?limit=200", other)).body.data.map((s: { id: number }) => s.id)).not.toContain(body.id);
      expect((await get("/scheduled-tasks/999999")).status).toBe(404);
    });
  });

  describe("runs", () => {
    /** Makes the schedule's next occurrence fall due now, as if its minute had come (schedules fire at most once a minute). */
    const fallDue = async (id: number, at: Date) => {
      await db.collection("scheduled_tasks").updateOne({ _id: id } as never, { $set: { next_run_at: at } });
    };
    /** The round-th whole second of the ten before the test began: past, and distinct and ascending by round
     * (counted back from each call's own clock, rounds a second apart named the same second). */
    let testStart = 0;
    beforeEach(() => {
      testStart = Math.floor(Date.now() / 1000) * 1000 - 10_000;
    });
    const pastSecond = (round: number) => new Date(testStart + round * 1000);

    it("creates one task per occurrence, however many schedulers run; disabling stops it", async () => {
      const taskType = "every-minute";
      const { body: schedule } = await post("/scheduled-tasks", {
        name: "Heartbeat",
        schedule: "* * * * *",
        task_template: { title: "Heartbeat check", task_type: taskType, input: { probe: true } },
      });
      for (let round = 1; round <= 3; round++) {
        await fallDue(schedule.id, pastSecond(round));
        await waitFor(async () => (await get(`/scheduled-tasks/${schedule.id}`)).body, (s) => s.run_count >= round);
      }
      const tasks = await waitFor(() => tasksOfType(taskType), (list) => list.length >= 3);
      expect(tasks.length).toBeGreaterThanOrEqual(3);
      expect(tasks[0]).toMatchObject({ title: "Heartbeat check", status: "pending", input: { probe: true }, scheduled_task_id: schedule.id });

      expect((await put(`/scheduled-tasks/${schedule.id}`, { enabled: false })).status).toBe(200);
      // A run already claimed when the schedule was disabled may still finish: let it land, then count.
      await new Promise((r) => setTimeout(r, 500));
      const stopped = (await get(`/scheduled-tasks/${schedule.id}`)).body;
      const created = await tasksOfType(taskType);
      expect(stopped).toMatchObject({ enabled: false, next_run_at: null, run_count: 3 });
      expect(created).toHaveLength(stopped.run_count);
      // Exactly one task per occurrence: every task names a different second.
      const occurrences = created.map((t) => t.scheduled_for);
      expect(new Set(occurrences).size).toBe(created.length);
      for (const at of occurrences) expect(new Date(at).getUTCMilliseconds()).toBe(0);
      expect(stopped.last_task_id).toBe(created[0]!.id);
      expect(stopped.last_run_at).toEqual(expect.any(String));

      // Disabled, an occurrence that falls due runs nowhere.
      await fallDue(schedule.id, pastSecond(9));
      await new Promise((r) => setTimeout(r, 1000));
      expect(await tasksOfType(taskType)).toHaveLength(created.length);
    });

    it("runs an overdue schedule once, not once per missed occurrence", async () => {
      const taskType = "missed-hourly";
      const { body: schedule } = await post("/scheduled-tasks", { name: "Hourly", schedule: "0 * * * *", task_template: { title: "Hourly", task_type: taskType } });
      // As if every scheduler had been down for three hours.
      await db.collection("scheduled_tasks").updateOne({ _id: schedule.id } as never, { $set: { next_run_at: new Date(Date.now() - 3 * 3600 * 1000) } });
      const tasks = await waitFor(() => tasksOfType(taskType), (list) => list.length >= 1);
      await new Promise((r) => setTimeout(r, 500));
      expect(await tasksOfType(taskType)).toHaveLength(1);
      expect(tasks).toHaveLength(1);
      const after = (await get(`/scheduled-tasks/${schedule.id}`)).body;
      expect(after.run_count).toBe(1);
      const next = new Date(after.next_run_at);
      expect(next.getTime()).toBeGreaterThan(Date.now());
      expect([next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([0, 0]);
    });

    it("records why a run created no task (its agent was deleted) and keeps running", async () => {
      const taskType = "agent-gone";
      const agent = (await post("/agents", { name: "Short-lived", model: "gpt-4o" })).body;
      const { body: schedule } = await post("/scheduled-tasks", {
        name: "Needs agent",
        schedule: "* * * * *",
        task_template: { title: "Agent work", task_type: taskType, agent_id: agent.id },
      });
      await fallDue(schedule.id, pastSecond(1));
      const first = await waitFor(() => tasksOfType(taskType), (list) => list.length >= 1);
      expect(first[0]).toMatchObject({ agent_id: agent.id });
      expect((await del(`/agents/${agent.id}`)).status).toBe(204);
      await fallDue(schedule.id, pastSecond(2));
      const failed = await waitFor(
        async () => (await get(`/scheduled-tasks/${schedule.id}`)).body,
        (s) => typeof s.last_error === "string",
      );
      expect(failed.last_error).toMatch(new RegExp(`agent ${agent.id}`));
      await put(`/scheduled-tasks/${schedule.id}`, { enabled: false });
    });
  });
});
