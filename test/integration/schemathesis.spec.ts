import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { routedCluster, startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup } from "../harness/http";
import { scaled } from "../harness/wait";

/** Whole run: install (first time only) plus the fuzzing budget; the budget stays a few minutes. */
const FUZZ_SECONDS = Number(process.env.SCHEMATHESIS_SECONDS ?? 150);

/**
 * schemathesis over the served /openapi.json (scripts/fuzz/schemathesis.sh): every check and phase, stateful
 * links on, authenticated as a seeded account's owner. Any 5xx, response outside its declared schema or
 * undeclared status fails the run. Every request goes to this loopback cluster. Neither the webhooks service
 * (its dispatcher would POST to fuzzed URLs) nor a knowledge loader runs, so no fuzzed URL is ever reached;
 * the webhook routes are fuzzed by test/integration/fuzz.spec.ts, whose targets are all on loopback.
 */
/** schemathesis' FAILURES section (what failed and how to reproduce it), or the output's end without one. */
function failuresOf(output: string): string {
  const start = output.indexOf("= FAILURES =");
  if (start < 0) return output.slice(-4000);
  const end = output.slice(start + 12).search(/={3,} (WARNINGS|SUMMARY) ={3,}/);
  return output.slice(start, end < 0 ? undefined : start + 12 + end).slice(0, 4000);
}

/**
 * Records whose ids the fuzzer would seldom hold: agents and teams (their creates link to them, but within its time
 * the stateful phase follows few of those links), schedules (a create rarely passes the cron rules), documents (read
 * by a route no create links to) and task dependencies (two records at once). The run's config binds their path
 * parameters to these for half of the generated values (the other half keep the 404 paths exercised), in every
 * operation but deletes, which would take them from the rest of the run. Written as a TOML fragment that
 * scripts/fuzz/schemathesis.sh appends to its config.
 */
async function seededParameters(call: (method: string, path: string, body?: unknown) => Promise<any>): Promise<string> {
  const agent = await call("POST", "/agents", { name: "Seeded agent" });
  const team = await call("POST", "/teams", { name: "Seeded team" });
  const schedule = await call("POST", "/scheduled-tasks", { name: "Seeded schedule", schedule: "0 9 * * 1", enabled: false, task_template: { title: "Run" } });
  const source = await call("POST", "/knowledge", { name: "Seeded uploads", data_type: "upload", paths: [] });
  const document = await call("POST", `/knowledge/${source.id}/documents`, { title: "Seeded note", text: "A seeded document. It has two sentences." });
  const [parent, child] = [await call("POST", "/tasks", { title: "Seeded parent" }), await call("POST", "/tasks", { title: "Seeded child" })];
  const dictionaries: Record<string, (string | number)[]> = {
    agents: [agent.id, agent.identifier],
    teams: [team.id, team.identifier],
    schedules: [schedule.id],
    sources: [source.id],
    documents: [document.id],
    tasks: [parent.id, child.id],
  };
  const bound: Record<string, string> = {
    agent_id_or_identifier: "agents",
    team_id_or_identifier: "teams",
    identifier: "teams",
    scheduled_task_id: "schedules",
    knowledge_source_id: "sources",
    document_id: "documents",
    task_id: "tasks",
    dependency_id: "tasks",
  };
  return [
    "[dictionaries]",
    ...Object.entries(dictionaries).map(([name, values]) => `${name} = { values = ${JSON.stringify(values)} }`),
    "",
    "[[operations]]",
    'exclude-method = "DELETE"',
    `parameters = { ${Object.entries(bound).map(([param, name]) => `"path.${param}" = { dictionary = "${name}", probability = 0.5 }`).join(", ")} }`,
    "",
  ].join("\n");
}

describe("schemathesis against the served OpenAPI document", () => {
  let cluster: Cluster;
  let token: string;
  let seeds: string;

  beforeAll(async () => {
    cluster = await startCluster(routedCluster("schemathesis", "search", "knowledge"));
    token = (await signup(apiClient(cluster.baseUrl), "schemathesis")).token;
    const api = apiClient(cluster.baseUrl);
    const fragment = await seededParameters(async (method, route, body) => {
      const res = await api(method, `/api/v1${route}`, { token, body });
      if (res.status !== 201) throw new Error(`seeding ${method} ${route}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    });
    const dir = path.resolve(__dirname, "..", "..", ".cache");
    mkdirSync(dir, { recursive: true });
    seeds = path.join(dir, "schemathesis-seeds.toml");
    writeFileSync(seeds, fragment);
  }, scaled(60_000));
  afterAll(() => cluster?.stop(), 60_000);

  it(
    "finds no failures",
    async () => {
      const script = path.resolve(__dirname, "..", "..", "scripts", "fuzz", "schemathesis.sh");
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn("bash", [script, cluster.baseUrl, token, String(FUZZ_SECONDS)], {
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, SCHEMATHESIS_SEEDS: seeds },
        });
        let output = "";
        child.stdout.on("data", (d) => (output += d));
        child.stderr.on("data", (d) => (output += d));
        child.on("close", (code) => resolve({ code, output }));
      });
      // The warnings (which operations) and the summary go to the test log; on failure the whole report.
      const tailAt = [output.indexOf("= WARNINGS ="), output.indexOf("SUMMARY")].find((at) => at >= 0) ?? -1;
      const tail = tailAt >= 0 ? output.slice(output.lastIndexOf("\n", tailAt)) : output;
      console.log(`[schemathesis]\n${code === 0 ? tail : output}`);
      // The assertion itself carries the failures, so a log cut to its end still shows what failed.
      expect({ code, failures: code === 0 ? "" : failuresOf(output) }).toEqual({ code: 0, failures: "" });
    },
    (FUZZ_SECONDS + 240) * 1000,
  );
});
