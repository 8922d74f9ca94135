import type { Context, ServiceSchema } from "moleculer";
import type { Config } from "../../lib/config";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled } from "../harness/wait";

type Event = { name: string; payload: { accountId: number; data: { id: number } & Record<string, unknown> } };

describe("tasks over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let other: string;
  let accountId: number;
  const events: Event[] = [];

  const recorder: ServiceSchema = {
    name: "task-events-recorder",
    events: {
      "task.*"(ctx: Context<Event["payload"]>) {
        events.push({ name: ctx.eventName ?? "", payload: ctx.params });
      },
    },
  };

  beforeAll(async () => {
    cluster = await startCluster({ database: "tasks", extraServices: [recorder] });
    api = apiClient(cluster.baseUrl);
    const owner = await signup(api, "tasks");
    token = owner.token;
    accountId = owner.user.account_id;
    other = (await signup(api, "tasks-intruder")).token;
  });
  afterAll(() => cluster?.stop());

  const post = (path: string, body?: unknown, t = token) => api("POST", `/api/v1${path}`, { token: t, body });
  const get = (path: string, t = token) => api("GET", `/api/v1${path}`, { token: t });
  const put = (path: string, body: unknown, t = token) => api("PUT", `/api/v1${path}`, { token: t, body });
  const del = (path: string, t = token) => api("DELETE", `/api/v1${path}`, { token: t });
  const createTask = async (body: Record<string, unknown>, t = token) => {
    const res = await post("/tasks", body, t);
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: number } & Record<string, any>;
  };
  const locs = (body: { detail: { loc: (string | number)[] }[] }) => body.detail.map((d) => d.loc.join("."));
  const eventually = async (check: () => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + scaled(timeoutMs);
    while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(check()).toBe(true);
  };

  describe("CRUD", () => {
    it("creates a task with defaults, ignores read-only keys, refuses unknown ones, and answers 201 with Location", async () => {
      const typo = await post("/tasks", { title: "Write the report", colour: "red" });
      expect(typo.status).toBe(422);
      expect(typo.body.detail).toEqual([{ loc: ["body", "colour"], msg: "Unknown field 'colour'", type: "extra_forbidden" }]);
      const res = await post("/tasks", { title: "  Write the report  ", dependency_ids: [1, 2], account_id: 999 });
      expect(res.status).toBe(201);
      expect(res.headers.get("location")).toBe(`/api/v1/tasks/${res.body.id}`);
      expect(res.body).toEqual({
        id: expect.any(Number),
        account_id: accountId,
        title: "Write the report",
        description: null,
        status: "pending",
        task_type: "general",
        priority: "medium",
        parent_id: null,
        team_id: null,
        agent_id: null,
        session_id: null,
        input: {},
        result: null,
        dependency_ids: [],
        scheduled_task_id: null,
        scheduled_for: null,
        completed_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
    });

    it("reads, partially updates and deletes a task", async () => {
      const task = await createTask({ title: "Draft", description: "first", input: { topic: "q3" }, session_id: "sess-1" });
      const read = await get(`/tasks/${task.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: task.id, title: "Draft", input: { topic: "q3" }, parent: null, team: null, agent: null, dependencies: [], subtask_count: 0 });

      const updated = await put(`/tasks/${task.id}`, { priority: "urgent", result: { summary: "done" }, session_id: null });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ title: "Draft", description: "first", priority: "urgent", result: { summary: "done" }, session_id: null, input: { topic: "q3" } });

      expect((await del(`/tasks/${task.id}`)).status).toBe(204);
      expect((await get(`/tasks/${task.id}`)).status).toBe(404);
      expect((await put(`/tasks/${task.id}`, { title: "x" })).status).toBe(404);
      expect((await del(`/tasks/${task.id}`)).status).toBe(404);
    });

    it("refuses bad input with 422 naming each field", async () => {
      const missing = await post("/tasks", { description: "no title" });
      expect(missing.status).toBe(422);
      expect(locs(missing.body)).toEqual(["body.title"]);
      expect((await post("/tasks", { title: "   " })).status).toBe(422);
      expect((await post("/tasks", { title: "x".repeat(501) })).status).toBe(422);
      expect((await post("/tasks", { title: "x".repeat(500) })).status).toBe(201);
      const enums = await post("/tasks", { title: "t", status: "done", priority: "critical" });
      expect(enums.status).toBe(422);
      expect(locs(enums.body).sort()).toEqual(["body.priority", "body.status"]);
      expect((await post("/tasks", { title: "t", input: "not an object" })).status).toBe(422);
      expect((await post("/tasks", { title: "t", parent_id: -1 })).status).toBe(422);
      expect((await get("/tasks/abc")).status).toBe(422);
      const task = await createTask({ title: "valid" });
      expect((await put(`/tasks/${task.id}`, { status: "archived" })).status).toBe(422);
      expect((await put(`/tasks/${task.id}`, { title: "" })).status).toBe(422);
    });

    it("bounds list parameters: limit 1..1000, skip >= 0, status from the enum", async () => {
      expect((await get("/tasks?limit=0")).status).toBe(422);
      expect((await get("/tasks?limit=1001")).status).toBe(422);
      expect((await get("/tasks?limit=1000")).status).toBe(200);
      expect((await get("/tasks?skip=-1")).status).toBe(422);
      const badStatus = await get("/tasks?status=done");
      expect(badStatus.status).toBe(422);
      expect(locs(badStatus.body)).toEqual(["query.status"]);
      expect((await get("/tasks?team_id=abc")).status).toBe(422);
    });
  });

  describe("assignment and filters", () => {
    let team: { id: number; name: string; identifier: string };
    let agent: { id: number; name: string; identifier: string };

    beforeAll(async () => {
      team = (await post("/teams", { name: "Research team" })).body;
      agent = (await post("/agents", { name: "Researcher", model: "gpt-4o" })).body;
    });

    it("resolves team and agent on read; unknown or another account's team/agent is 422 naming the field", async () => {
      const task = await createTask({ title: "Assigned", team_id: team.id, agent_id: agent.id });
      const read = (await get(`/tasks/${task.id}`)).body;
      expect(read.team).toEqual({ id: team.id, name: "Research team", identifier: team.identifier });
      expect(read.agent).toEqual({ id: agent.id, name: "Researcher", identifier: agent.identifier });

      const unknown = await post("/tasks", { title: "x", team_id: 999_999, agent_id: 999_998 });
      expect(unknown.status).toBe(422);
      expect(locs(unknown.body).sort()).toEqual(["body.agent_id", "body.team_id"]);
      const foreign = await post("/tasks", { title: "x", team_id: team.id }, other);
      expect(foreign.status).toBe(422);
      expect(locs(foreign.body)).toEqual(["body.team_id"]);
      expect((await put(`/tasks/${task.id}`, { agent_id: 999_999 })).status).toBe(422);
      // Unassigning is always allowed.
      expect((await put(`/tasks/${task.id}`, { team_id: null, agent_id: null })).body).toMatchObject({ team_id: null, agent_id: null });
    });

    it("filters by status, team, agent, parent, type and session, newest first, as a bare array with skip/limit", async () => {
      const parent = await createTask({ title: "Filter parent", task_type: "filter-test" });
      const a = await createTask({ title: "A", task_type: "filter-test", team_id: team.id, session_id: "s-filter", parent_id: parent.id });
      const b = await createTask({ title: "B", task_type: "filter-test", agent_id: agent.id, status: "blocked" });
      await createTask({ title: "C", task_type: "other-type" });

      const ids = async (query: string) => {
        const res = await get(`/tasks?${query}`);
        expect(res.status).toBe(200);
        expect(Array.isArray(res.body)).toBe(true);
        return res.body.map((t: { id: number }) => t.id);
      };
      expect(await ids("task_type=filter-test")).toEqual([b.id, a.id, parent.id]);
      expect(await ids("task_type=filter-test&status=blocked")).toEqual([b.id]);
      expect(await ids(`team_id=${team.id}&task_type=filter-test`)).toEqual([a.id]);
      expect(await ids(`agent_id=${agent.id}`)).toEqual([b.id]);
      expect(await ids(`parent_id=${parent.id}`)).toEqual([a.id]);
      expect(await ids("session_id=s-filter")).toEqual([a.id]);
      expect(await ids("task_type=filter-test&skip=1&limit=1")).toEqual([a.id]);
      // Another account sees none of them.
      const theirs = await get("/tasks?task_type=filter-test", other);
      expect(theirs.body).toEqual([]);
    });
  });

  describe("subtasks", () => {
    it("lists a task's subtasks in creation order and shows the parent and subtask count", async () => {
      const parent = await createTask({ title: "Plan" });
      const steps = [];
      for (const title of ["Step 1", "Step 2", "Step 3"]) steps.push(await createTask({ title, parent_id: parent.id }));
      const subtasks = await get(`/tasks/${parent.id}/subtasks`);
      expect(subtasks.status).toBe(200);
      expect(subtasks.body.map((t: { title: string }) => t.title)).toEqual(["Step 1", "Step 2", "Step 3"]);
      expect((await get(`/tasks/${parent.id}/subtasks?skip=1&limit=1`)).body.map((t: { id: number }) => t.id)).toEqual([steps[1]!.id]);
      expect((await get(`/tasks/${parent.id}/subtasks?limit=1001`)).status).toBe(422);
      expect((await get(`/tasks/${parent.id}`)).body.subtask_count).toBe(3);
      expect((await get(`/tasks/${steps[0]!.id}`)).body.parent).toEqual({ id: parent.id, title: "Plan", status: "pending" });
      expect((await get("/tasks/999999/subtasks")).status).toBe(404);
    });

    it("refuses an unknown parent or itself (422) and a parent that is one of its own subtasks (409)", async () => {
      const root = await createTask({ title: "Root" });
      const child = await createTask({ title: "Child", parent_id: root.id });
      const grandchild = await createTask({ title: "Grandchild", parent_id: child.id });
      const unknown = await post("/tasks", { title: "x", parent_id: 999_999 });
      expect(unknown.status).toBe(422);
      expect(locs(unknown.body)).toEqual(["body.parent_id"]);
      const foreignParent = await post("/tasks", { title: "x", parent_id: root.id }, other);
      expect(foreignParent.status).toBe(422);
      const self = await put(`/tasks/${root.id}`, { parent_id: root.id });
      expect(self.status).toBe(422);
      expect(locs(self.body)).toEqual(["body.parent_id"]);
      const cycle = await put(`/tasks/${root.id}`, { parent_id: grandchild.id });
      expect(cycle.status).toBe(409);
      expect((await get(`/tasks/${root.id}`)).body.parent_id).toBeNull();
      // Moving a subtask elsewhere and detaching it are fine.
      expect((await put(`/tasks/${grandchild.id}`, { parent_id: root.id })).body.parent_id).toBe(root.id);
      expect((await put(`/tasks/${grandchild.id}`, { parent_id: null })).body.parent_id).toBeNull();
    });
  });

  describe("dependencies", () => {
    it("adds a dependency idempotently and shows it resolved", async () => {
      const build = await createTask({ title: "Build" });
      const deploy = await createTask({ title: "Deploy" });
      const added = await post(`/tasks/${deploy.id}/dependencies/${build.id}`);
      expect(added.status).toBe(200);
      expect(added.body).toEqual({ message: expect.stringContaining(String(build.id)) });
      const again = await post(`/tasks/${deploy.id}/dependencies/${build.id}`);
      expect(again.status).toBe(200);
      const read = (await get(`/tasks/${deploy.id}`)).body;
      expect(read.dependency_ids).toEqual([build.id]);
      expect(read.dependencies).toEqual([{ id: build.id, title: "Build", status: "pending" }]);
      // dependency_ids is read-only in the body.
      expect((await put(`/tasks/${deploy.id}`, { dependency_ids: [] })).body.dependency_ids).toEqual([build.id]);
    });

    it("refuses a self-dependency (422) and any cycle (409)", async () => {
      const a = await createTask({ title: "A" });
      const b = await createTask({ title: "B" });
      const c = await createTask({ title: "C" });
      const self = await post(`/tasks/${a.id}/dependencies/${a.id}`);
      expect(self.status).toBe(422);
      expect(locs(self.body)).toEqual(["path.dependency_id"]);
      expect((await post(`/tasks/${a.id}/dependencies/${b.id}`)).status).toBe(200);
      expect((await post(`/tasks/${b.id}/dependencies/${a.id}`)).status).toBe(409);
      expect((await post(`/tasks/${b.id}/dependencies/${c.id}`)).status).toBe(200);
      const longCycle = await post(`/tasks/${c.id}/dependencies/${a.id}`);
      expect(longCycle.status).toBe(409);
      expect(longCycle.body.detail).toMatch(/cycle/);
      expect((await get(`/tasks/${c.id}`)).body.dependency_ids).toEqual([]);
    });

    it("answers 404 for a missing task or dependency and 403 for another account's", async () => {
      const mine = await createTask({ title: "Mine" });
      const theirs = await createTask({ title: "Theirs" }, other);
      expect((await post(`/tasks/${mine.id}/dependencies/999999`)).status).toBe(404);
      expect((await post(`/tasks/999999/dependencies/${mine.id}`)).status).toBe(404);
      expect((await post(`/tasks/${mine.id}/dependencies/${theirs.id}`)).status).toBe(403);
      expect((await post(`/tasks/${theirs.id}/dependencies/${mine.id}`)).status).toBe(403);
      expect((await del(`/tasks/${theirs.id}/dependencies/${mine.id}`)).status).toBe(403);
    });

    it("removes a dependency with 204, idempotently", async () => {
      const first = await createTask({ title: "First" });
      const second = await createTask({ title: "Second" });
      await post(`/tasks/${second.id}/dependencies/${first.id}`);
      expect((await del(`/tasks/${second.id}/dependencies/${first.id}`)).status).toBe(204);
      expect((await get(`/tasks/${second.id}`)).body.dependency_ids).toEqual([]);
      expect((await del(`/tasks/${second.id}/dependencies/${first.id}`)).status).toBe(204);
      expect((await del(`/tasks/999999/dependencies/${first.id}`)).status).toBe(404);
    });

    it("deleting a task removes every link to and from it and keeps its subtasks as top-level tasks", async () => {
      const upstream = await createTask({ title: "Upstream" });
      const middle = await createTask({ title: "Middle" });
      const downstream = await createTask({ title: "Downstream" });
      const child = await createTask({ title: "Child of middle", parent_id: middle.id });
      await post(`/tasks/${middle.id}/dependencies/${upstream.id}`);
      await post(`/tasks/${downstream.id}/dependencies/${middle.id}`);
      await post(`/tasks/${downstream.id}/dependencies/${upstream.id}`);

      expect((await del(`/tasks/${middle.id}`)).status).toBe(204);
      const after = (await get(`/tasks/${downstream.id}`)).body;
      expect(after.dependency_ids).toEqual([upstream.id]);
      expect(after.dependencies).toEqual([{ id: upstream.id, title: "Upstream", status: "pending" }]);
      expect((await get(`/tasks/${child.id}`)).body).toMatchObject({ parent_id: null, parent: null });
      expect((await get(`/tasks/${upstream.id}`)).status).toBe(200);
    });
  });

  describe("status rules", () => {
    it("refuses starting or completing a task before its dependencies complete (409), then allows it", async () => {
      const dep = await createTask({ title: "Gather data" });
      const task = await createTask({ title: "Analyse" });
      await post(`/tasks/${task.id}/dependencies/${dep.id}`);
      const refused = await put(`/tasks/${task.id}`, { status: "in_progress" });
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({ detail: expect.stringContaining("dependencies"), unmet_dependency_ids: [dep.id] });
      expect((await put(`/tasks/${task.id}`, { status: "completed" })).status).toBe(409);
      // Moves that do not start or finish the work are free.
      expect((await put(`/tasks/${task.id}`, { status: "blocked" })).status).toBe(200);

      expect((await put(`/tasks/${dep.id}`, { status: "completed" })).status).toBe(200);
      const started = await put(`/tasks/${task.id}`, { status: "in_progress" });
      expect(started.status).toBe(200);
      expect(started.body).toMatchObject({ status: "in_progress", completed_at: null });
    });

    it("sets completed_at when a task completes, keeps it while completed and clears it when reopened", async () => {
      const created = await createTask({ title: "Done at once", status: "completed" });
      expect(created.completed_at).toEqual(expect.any(String));
      const task = await createTask({ title: "Finish me" });
      const done = (await put(`/tasks/${task.id}`, { status: "completed" })).body;
      expect(Date.parse(done.completed_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
      expect((await put(`/tasks/${task.id}`, { status: "completed", title: "Finished" })).body.completed_at).toBe(done.completed_at);
      expect((await put(`/tasks/${task.id}`, { status: "pending" })).body.completed_at).toBeNull();
    });
  });

  it("answers 403 for another account's task on every endpoint and never lists it", async () => {
    const task = await createTask({ title: "Private", task_type: "private-type" });
    expect((await get(`/tasks/${task.id}`, other)).status).toBe(403);
    expect((await put(`/tasks/${task.id}`, { title: "mine now" }, other)).status).toBe(403);
    expect((await del(`/tasks/${task.id}`, other)).status).toBe(403);
    expect((await get(`/tasks/${task.id}/subtasks`, other)).status).toBe(403);
    expect((await get("/tasks?task_type=private-type", other)).body).toEqual([]);
    expect((await get(`/tasks/${task.id}`)).body.title).toBe("Private");
    expect((await api("GET", "/api/v1/tasks")).status).toBe(401);
  });

  it("emits task.created, task.updated and task.deleted with the account and the record", async () => {
    const task = await createTask({ title: "Evented" });
    await put(`/tasks/${task.id}`, { status: "in_progress" });
    await del(`/tasks/${task.id}`);
    const mine = () => events.filter((e) => e.payload.data.id === task.id);
    await eventually(() => mine().length >= 3);
    expect(mine().map((e) => e.name)).toEqual(["task.created", "task.updated", "task.deleted"]);
    expect(mine()[0]!.payload).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: "task.created",
      account_id: accountId,
      subject: `tasks/${task.id}`,
      data: expect.objectContaining({ id: task.id, title: "Evented", status: "pending" }),
      occurred_at: expect.any(String),
    });
    expect(mine()[2]!.payload.data).toEqual({ id: task.id });
    expect(mine()[1]!.payload.data.status).toBe("in_progress");
  });

  describe("onboarding task on signup (ONBOARDING_TASK_ENABLED)", () => {
    /** The running tasks service's setting (config.onboardingTaskEnabled), switched per test. */
    const onboarding = (enabled: boolean) => {
      const tasks = cluster.brokers[1]!.getLocalService("tasks") as unknown as { settings: { config: Config } };
      tasks.settings.config.onboardingTaskEnabled = enabled;
    };
    afterEach(() => onboarding(false));

    const onboardingTasks = async (t: string) => (await api("GET", "/api/v1/tasks?task_type=onboarding", { token: t })).body as { title: string; input: { user_id: number } }[];

    it("is off by default: a signup creates no task", async () => {
      const fresh = await signup(api, "no-onboarding");
      await new Promise((r) => setTimeout(r, 500));
      expect(await onboardingTasks(fresh.token)).toEqual([]);
    });

    it("when enabled, each new user gets one onboarding task in their account, in the background", async () => {
      onboarding(true);
      const fresh = await signup(api, "onboarding");
      const deadline = Date.now() + scaled(10_000);
      let tasks = await onboardingTasks(fresh.token);
      while (!tasks.length && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        tasks = await onboardingTasks(fresh.token);
      }
      expect(tasks).toHaveLength(1);
      expect(tasks[0]).toMatchObject({ title: "Set up your account", status: "pending", input: { user_id: fresh.user.id } });
      // Another account never sees it.
      expect(await onboardingTasks(other)).toEqual([]);
    });
  });
});
