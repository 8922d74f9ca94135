import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { routedCluster, startCluster, type Cluster } from "../harness/cluster";

const ROOT = path.resolve(__dirname, "..", "..");
const bin = (name: string) => path.join(ROOT, "node_modules", ".bin", name);

/** Runs a command to its end; its exit code and everything it printed. */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Redocly's CLI neither reports usage nor looks for updates (no network but package registries). */
const QUIET_REDOCLY = { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };

/**
 * The clients API users generate from the served /openapi.json (README, "Generated clients"), with the commands
 * the README gives: openapi-python-client (default configuration) must generate without an error or a warning;
 * openapi-typescript's types must type-check a strict client flow (test/clients/flow.ts, openapi-fetch) over every
 * operation family, which then runs against this platform; Redocly's recommended ruleset must find no error.
 */
describe("clients generated from the served OpenAPI document", () => {
  let cluster: Cluster;
  let pythonOut: string;

  beforeAll(async () => {
    cluster = await startCluster(routedCluster("clients", "search", "knowledge", "knowledge-loader", "webhooks"));
    pythonOut = mkdtempSync(path.join(os.tmpdir(), "python-client-"));
  }, 60_000);
  afterAll(async () => {
    rmSync(pythonOut, { recursive: true, force: true });
    await cluster?.stop();
  }, 60_000);

  it(
    "openapi-python-client generates a client with no error and no warning",
    async () => {
      const { code, output } = await run("bash", ["scripts/clients/python.sh", cluster.baseUrl, path.join(pythonOut, "client")]);
      expect({ code, output }).toEqual({ code: 0, output: expect.not.stringMatching(/warning|error/i) });
    },
    240_000,
  );

  it(
    "openapi-typescript types check a strict openapi-fetch flow over every operation family, which then runs",
    async () => {
      const generate = await run(process.execPath, [bin("openapi-typescript"), `${cluster.baseUrl}/openapi.json`, "-o", "test/clients/generated/api.d.ts"]);
      expect(generate).toEqual({ code: 0, output: expect.not.stringMatching(/warn|error/i) });
      const typecheck = await run(process.execPath, [path.join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "test/clients/tsconfig.json"]);
      expect(typecheck).toEqual({ code: 0, output: "" });
      const flow = await run(process.execPath, ["test/clients/generated/dist/flow.js"], { PLATFORM_URL: cluster.baseUrl });
      expect(flow).toEqual({ code: 0, output: "client flow passed\n" });
    },
    120_000,
  );

  it(
    "redocly lint with the recommended ruleset finds no error",
    async () => {
      const { code, output } = await run(process.execPath, [bin("redocly"), "lint", "--extends=recommended", `${cluster.baseUrl}/openapi.json`], QUIET_REDOCLY);
      // The warnings kept on purpose are listed in docs/adr/0045-openapi-for-generated-clients.md.
      expect({ code, output }).toEqual({ code: 0, output: expect.stringMatching(/Your API description is valid/) });
    },
    60_000,
  );
});
