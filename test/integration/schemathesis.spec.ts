import { spawn } from "node:child_process";
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

describe("schemathesis against the served OpenAPI document", () => {
  let cluster: Cluster;
  let token: string;

  beforeAll(async () => {
    cluster = await startCluster(routedCluster("schemathesis", "search", "knowledge"));
    token = (await signup(apiClient(cluster.baseUrl), "schemathesis")).token;
  }, scaled(60_000));
  afterAll(() => cluster?.stop(), 60_000);

  it(
    "finds no failures",
    async () => {
      const script = path.resolve(__dirname, "..", "..", "scripts", "fuzz", "schemathesis.sh");
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn("bash", [script, cluster.baseUrl, token, String(FUZZ_SECONDS)], { stdio: ["ignore", "pipe", "pipe"] });
        let output = "";
        child.stdout.on("data", (d) => (output += d));
        child.stderr.on("data", (d) => (output += d));
        child.on("close", (code) => resolve({ code, output }));
      });
      // The summary (operations, test cases, failures) goes to the test log; on failure the whole report.
      const summaryAt = output.indexOf("SUMMARY");
      const summary = summaryAt >= 0 ? output.slice(output.lastIndexOf("\n", summaryAt)) : output;
      console.log(`[schemathesis]\n${code === 0 ? summary : output}`);
      // The assertion itself carries the failures, so a log cut to its end still shows what failed.
      expect({ code, failures: code === 0 ? "" : failuresOf(output) }).toEqual({ code: 0, failures: "" });
    },
    (FUZZ_SECONDS + 240) * 1000,
  );
});
