import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { unlessMongoJava } from "../harness/disagreements";
import { apiClient, signup, type Api } from "../harness/http";
import { until } from "../harness/wait";
import { captureQueryShapes, declaredIndexes, describeShape, ID_INDEX, localPlan, served, type QueryShape } from "../harness/query-shapes";

/**
 * Whole-collection reads made once when the search service starts (the embedded engine loads its index into
 * memory; unfinished deletions resume), not per request.
 */
const STARTUP_READS = [
  "search_chunks find {}",
  "search_chunks findOne {}",
  "search_index_state find {}",
  "search_pending_embeddings find {}",
  "search_deletions find {}",
  "search_documents find {deletion_job_id: other}",
];

/**
 * Every query the services issue is served by an index declared in its mongoose schema, so its cost on a real
 * MongoDB follows the caller's records, not the database's: a scripted run over the API's endpoints captures the
 * query shapes (mongoose's debug hook) and each is checked against the schemas' indexes.
 */
describe("query shapes and their indexes", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  const capture = captureQueryShapes();

  beforeAll(async () => {
    cluster = await startCluster({ database: "indexes", embedded: true });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "indexes")).token;
  });
  afterAll(async () => {
    capture.stop();
    await cluster?.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api(method, `/api/v1${path}`, { token, body });
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  /** Creates, reads, lists, filters, updates and deletes through every resource's endpoints. */
  async function scriptedRun(): Promise<void> {
    await call("GET", "/users/me");
    await call("GET", "/users/");
    const key = await call("POST", "/account-api-keys", { name: "ci" });
    await call("GET", "/account-api-keys");
    await call("DELETE", `/account-api-keys/${key.id}`);

    const trait = await call("POST", "/traits", { name: "Concise", category: "tone" });
    const tool = await call("POST", "/tools", { name: "Lookup", identifier: "lookup" });
    const agent = await call("POST", "/agents", { name: "Helper", traits: [trait.id], tools: [tool.id] });
    const team = await call("POST", "/teams", { name: "Core", agent_ids: [agent.id] });
    for (const path of ["/traits", "/traits/categories", "/tools", "/agents", "/agents?sort_by=name", "/agents/directory", "/agents/directory?search=help", "/teams"]) await call("GET", path);
    for (const path of [`/agents/${agent.id}`, `/agents/${agent.identifier}`, `/agents/${agent.id}/traits`, `/agents/${agent.id}/tools`, `/teams/${team.id}`, `/teams/${team.identifier}/config`]) await call("GET", path);
    await call("PUT", `/agents/${agent.id}`, { name: "Helper Two" });
    await call("POST", "/teams/push", {
      name: "Pushed",
      traits: [{ name: "Warm", category: "tone" }],
      tools: [{ name: "Search", type: "function" }],
      agents: [{ name: "Pusher", model: "gpt-4o-mini", traits: ["Warm"] }],
    });

    const parent = await call("POST", "/tasks", { title: "Parent", agent_id: agent.id, team_id: team.id });
    const child = await call("POST", "/tasks", { title: "Child", parent_id: parent.id });
    await call("POST", `/tasks/${child.id}/dependencies/${parent.id}`);
    for (const path of ["/tasks", "/tasks?status=pending", `/tasks?agent_id=${agent.id}`, `/tasks?team_id=${team.id}`, `/tasks?parent_id=${parent.id}`, "/tasks?task_type=general", `/tasks/${parent.id}/subtasks`]) await call("GET", path);
    await call("PATCH", `/tasks/${parent.id}`, { status: "completed" });
    await call("DELETE", `/tasks/${child.id}/dependencies/${parent.id}`);
    await call("DELETE", `/tasks/${child.id}`);

    const schedule = await call("POST", "/scheduled-tasks", { name: "Digest", schedule: "0 9 * * 1", task_template: { title: "Digest" } });
    await call("GET", "/scheduled-tasks");
    await call("PATCH", `/scheduled-tasks/${schedule.id}`, { enabled: false });
    await call("DELETE", `/scheduled-tasks/${schedule.id}`);

    const entity = await call("POST", "/entities", { agent_id: agent.id, entity_type_name: "Lead", attributes: { name: "Ada" }, session_id: "s1" });
    for (const path of ["/entities", "/entities?include_facets=true", `/entities?agent_id=${agent.id}&status=new&days=7&template_name=lead&search=ada`, "/entities/facets", "/entities/stats", "/entities/stats?group_by_agent=true&days=30", "/entities/export", `/entities/${entity.id}`]) await call("GET", path);
    await call("PATCH", `/entities/${entity.id}`, { status: "reviewed" });
    await call("DELETE", `/entities/${entity.id}`);

    const source = await call("POST", "/knowledge", { name: "Notes", data_type: "website", paths: ["https://docs.example.com/"], auto_load: false });
    for (const path of ["/knowledge", `/knowledge/${source.id}`, `/knowledge/${source.id}/stats`, `/knowledge/${source.id}/documents`, "/knowledge/documents", "/knowledge/documents/stats"]) await call("GET", path);
    await call("POST", "/knowledge/documents/search", { query: "platform" });
    // A chunking change re-chunks the source's documents in the background (the loader's rechunk job).
    const uploads = await call("POST", "/knowledge", { name: "Uploads", data_type: "upload", paths: [], chunking: { strategy: "sentence", size: 200 } });
    await call("POST", `/knowledge/${uploads.id}/documents`, { title: "Note", text: "First sentence here. Second sentence there. ".repeat(20) });
    const changed = await call("PATCH", `/knowledge/${uploads.id}`, { chunking: { strategy: "fixed" } });
    await until(() => call("GET", `/knowledge/${uploads.id}`), (s) => s.rechunk?.job_id === changed.rechunk.job_id && s.rechunk.status === "done", 60_000, "the re-chunk");

    const hook = await call("POST", "/webhook-subscriptions", { url: "https://hooks.example.com/in", event_types: ["agent.deleted"] });
    await call("GET", "/webhook-subscriptions");
    await call("GET", `/webhook-subscriptions/${hook.id}/deliveries`);
    await call("DELETE", `/agents/${agent.id}?force=true`);
    await call("DELETE", `/teams/${team.id}`);
    await call("DELETE", `/knowledge/${source.id}`);
    await call("DELETE", `/webhook-subscriptions/${hook.id}`);
  }

  // Creating a trait, tool or agent looks its identifier's family up by regex ({account_id, identifier: /^x(-\d+)?$/}),
  // which mongo-java-server cannot answer through a compound unique index (its AbstractUniqueIndex throws).
  unlessMongoJava("a regex on a field of a compound unique index is not implemented")("serves every captured query shape with a declared index", async () => {
    await scriptedRun();
    // Let the background workers (scheduler, webhook dispatcher, knowledge jobs) poll at least once.
    await new Promise((r) => setTimeout(r, 1500));
    const indexes = declaredIndexes();
    const shapes = new Map<string, QueryShape>(capture.shapes().map((s) => [describeShape(s), s]));
    const unserved = [...shapes.entries()]
      .filter(([description, shape]) => !STARTUP_READS.includes(description) && !(indexes.get(shape.collection) ?? [ID_INDEX]).some((index) => served(shape, index)))
      .map(([description]) => description);
    expect(shapes.size).toBeGreaterThan(30);
    expect(unserved).toEqual([]);
  });

  unlessMongoJava("it has no explain command")("on the local server, SQLite reads every list through an index, in index order (EXPLAIN QUERY PLAN)", async () => {
    const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    try {
      const plans = new Map<string, string[]>();
      for (const find of capture.finds().filter((f) => Object.keys(f.sort).length > 0 && !STARTUP_READS.some((r) => r.startsWith(`${f.collection} `)))) {
        const plan = await localPlan(conn.db!, find);
        if (!plan) return; // a real MongoDB: its planner has the declared indexes
        plans.set(`${find.collection} ${JSON.stringify(find.filter)} sort ${JSON.stringify(find.sort)}`, plan);
      }
      expect(plans.size).toBeGreaterThan(10);
      const unindexed = [...plans.entries()].filter(([, plan]) => !plan.some((line) => line.includes("USING INDEX")) || plan.some((line) => /^SCAN |TEMP B-TREE/.test(line)));
      expect(unindexed).toEqual([]);
    } finally {
      await conn.close();
    }
  });
});
