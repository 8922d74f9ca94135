import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { databaseUrl, freePort, startMongo } from "../test/harness/servers";
import { apiClient, signup, uniqueEmail, type Api } from "../test/harness/http";
import { startNode, stopAll, waitForOk } from "./processes";
import { positiveIntEnv } from "../lib/env";

/**
 * Issue 25, item 3: a burst of simultaneous logins with unknown emails from one address, and meanwhile a real
 * user's login from another address and /health. One process runs the platform as `npm start` does (gateway,
 * users, api-keys; bundled database), from the TypeScript sources of each tree given: the current one, and, with
 * BENCH_BEFORE_DIR, another checkout (e.g. `git archive 1220f42 | tar -x -C /tmp/before`, its node_modules a
 * symlink) to compare with. Loopback only; prints one markdown table.
 *
 *   tsc -p tsconfig.bench.json && node dist-bench/bench/login-burst.js
 */
const ROOT = path.resolve(__dirname, "..", "..");
const TS_REGISTER = path.join(ROOT, "test", "harness", "ts-register.js");
const BURST = positiveIntEnv(process.env, "BENCH_BURST", 120);
const ROUNDS = positiveIntEnv(process.env, "BENCH_ROUNDS", 2);
const HEALTH_POLL_MS = 100;
/** The real user's login starts this long into the burst, when the burst's hashes are running. */
const BYSTANDER_DELAY_MS = 100;
const STARTUP_TIMEOUT_MS = 90_000;

interface BurstResult {
  tree: string;
  round: number;
  statuses: Record<number, number>;
  burstMs: number;
  bystanderStatus: number;
  bystanderMs: number;
  bystanderAloneMs: number;
  healthMedianMs: number;
  healthMaxMs: number;
}

const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const start = performance.now();
  const value = await run();
  return [value, Math.round(performance.now() - start)];
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function measureBurst(api: Api, baseUrl: string): Promise<Omit<BurstResult, "tree" | "round">> {
  const login = (email: string, password: string, from: string) =>
    api("POST", "/api/v1/login/access-token", { body: { email, password }, headers: { "x-forwarded-for": from } });
  const owner = await signup(api, "bystander");
  const [, bystanderAloneMs] = await timed(() => login(owner.email, owner.password, "10.9.0.2"));
  const health: number[] = [];
  let bursting = true;
  const polling = (async () => {
    while (bursting) {
      const [, ms] = await timed(() => fetch(`${baseUrl}/health`).then((res) => res.arrayBuffer()));
      health.push(ms);
      await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
    }
  })();
  const burst = timed(() => Promise.all(Array.from({ length: BURST }, () => login(uniqueEmail("burst"), "guess-guess", "10.9.0.1"))));
  await new Promise((resolve) => setTimeout(resolve, BYSTANDER_DELAY_MS));
  const [bystander, bystanderMs] = await timed(() => login(owner.email, owner.password, "10.9.0.2"));
  const [answers, burstMs] = await burst;
  bursting = false;
  await polling;
  const statuses: Record<number, number> = {};
  for (const res of answers) statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  return { statuses, burstMs, bystanderStatus: bystander.status, bystanderMs, bystanderAloneMs, healthMedianMs: median(health), healthMaxMs: Math.max(0, ...health) };
}

async function runTree(tree: string, dir: string, mongoBase: string, round: number): Promise<BurstResult> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "login-burst-"));
  const platform = startNode(`platform (${tree})`, path.join(dir, "server.ts"), {
    NODE_OPTIONS: `-r ${TS_REGISTER}`,
    PORT: String(port),
    SERVICES: "gateway,users,api-keys",
    MONGO_URL: databaseUrl(mongoBase, `login_burst_${tree}_${round}_${randomBytes(3).toString("hex")}`),
    JWT_SECRET: randomBytes(32).toString("hex"),
    TRUSTED_PROXIES: "1",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
  });
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForOk(`${baseUrl}/health`, [platform], STARTUP_TIMEOUT_MS);
    return { tree, round, ...(await measureBurst(apiClient(baseUrl), baseUrl)) };
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function table(results: BurstResult[]): string {
  const codes = [...new Set(results.flatMap((r) => Object.keys(r.statuses).map(Number)))].sort();
  return [
    `| tree | round | burst answers (${codes.join(" / ")}) | burst done ms | real user's login during burst | alone ms | /health median / max ms |`,
    "|---|---:|---|---:|---|---:|---|",
    ...results.map(
      (r) =>
        `| ${r.tree} | ${r.round} | ${codes.map((c) => r.statuses[c] ?? 0).join(" / ")} | ${r.burstMs} | ${r.bystanderStatus} in ${r.bystanderMs} ms | ${r.bystanderAloneMs} | ${r.healthMedianMs} / ${r.healthMaxMs} |`,
    ),
  ].join("\n");
}

async function main() {
  const trees: [string, string][] = [["current", ROOT]];
  if (process.env.BENCH_BEFORE_DIR) trees.unshift(["before", path.resolve(process.env.BENCH_BEFORE_DIR)]);
  const mongo = await startMongo();
  const results: BurstResult[] = [];
  try {
    // Trees alternate within each round, so a machine that drifts (2 shared cores) skews both alike.
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [tree, dir] of trees) results.push(await runTree(tree, dir, mongo.url, round));
    }
  } finally {
    await stopAll();
    await mongo.stop();
  }
  console.log(`${BURST} simultaneous logins (unknown emails) from one address; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)}\n`);
  console.log(table(results));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
