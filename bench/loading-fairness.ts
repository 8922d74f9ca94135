import path from "node:path";
import { positiveIntEnv } from "../lib/env";
import { startCluster, type Cluster } from "../test/harness/cluster";
import { startChangingSite, startFixtureSite, type ChangingSite, type FixtureSite } from "../test/harness/fixture-site";
import { apiClient, signup, type Api } from "../test/harness/http";
import type { RunningServer } from "../test/harness/servers";
import { startInProcessServers } from "./in-process";
import { machine, writeResults } from "./report";

/**
 * Loading fairness bench (issue 25): how long an account's one-page source takes to load, alone and while another
 * account's BENCH_SLOW_SOURCES (3) sources sit on a stalled host (pages whose body never ends: every attempt runs
 * into the 15-s fetch limit, ~1 min per page with retries). The target: seconds, not the minutes the slow
 * sources take. One process, as `npm start` runs it (one loader, LOAD_CONCURRENCY slots), BENCH_ROUNDS (3) rounds.
 */

const ROOT = path.resolve(__dirname, "..", "..");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "loading-fairness.json");
const SLOW_SOURCES = positiveIntEnv(process.env, "BENCH_SLOW_SOURCES", 3);
const ROUNDS = positiveIntEnv(process.env, "BENCH_ROUNDS", 3);
/** The target: the small source loads within this many seconds while the slow ones run. */
const TARGET_SECONDS = 10;
const LOAD_TIMEOUT_MS = 300_000;
const POLL_MS = 100;
const ENDED = ["loaded", "partial", "failed"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function create(api: Api, token: string, body: object): Promise<number> {
  const res = await api("POST", "/api/v1/knowledge", { token, body });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as number;
}

async function status(api: Api, token: string, id: number): Promise<string> {
  return (await api("GET", `/api/v1/knowledge/${id}`, { token })).body.loading_status as string;
}

/** Seconds from creating a one-page source until its load ends (loaded). */
async function timeSmallSource(api: Api, token: string, site: ChangingSite): Promise<number> {
  const started = Date.now();
  const id = await create(api, token, { paths: [site.baseUrl], data_type: "sitemap" });
  for (;;) {
    const now = await status(api, token, id);
    if (now === "loaded") return (Date.now() - started) / 1000;
    if (ENDED.includes(now)) throw new Error(`the small source ended ${now}`);
    if (Date.now() - started > LOAD_TIMEOUT_MS) throw new Error(`the small source did not load in ${LOAD_TIMEOUT_MS / 1000} s`);
    await sleep(POLL_MS);
  }
}

/** Times ROUNDS one-page sources of `small`, one after another; the slow sources (if any) keep stalling meanwhile. */
async function timeRounds(api: Api, token: string, site: ChangingSite): Promise<number[]> {
  const seconds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) seconds.push(await timeSmallSource(api, token, site));
  return seconds;
}

async function main() {
  const servers: RunningServer[] = [];
  const sites: (FixtureSite | ChangingSite)[] = [];
  let cluster: Cluster | undefined;
  try {
    servers.push(...(await startInProcessServers({ EMBEDDING_PROVIDER: "none" })));
    // The small source: a one-page sitemap site.
    const [stalled, small] = await Promise.all([startFixtureSite("flaky"), startChangingSite(1)]);
    sites.push(stalled, small);
    cluster = await startCluster({ database: "bench_loading_fairness", embedded: true });
    const api = apiClient(cluster.baseUrl);
    const [slowAccount, smallAccount] = await Promise.all([signup(api, "fair-slow"), signup(api, "fair-small")]);
    const alone = await timeRounds(api, smallAccount.token, small);

    const slowIds: number[] = [];
    for (let n = 1; n <= SLOW_SOURCES; n++) slowIds.push(await create(api, slowAccount.token, { paths: [`${stalled.baseUrl}/_/endless?n=${n}`], data_type: "text" }));
    // The slow loads are under way (queued and claimed first) before the small sources are made.
    while (stalled.hits("/_/endless") === 0) await sleep(POLL_MS);
    const slowStarted = Date.now();
    const beside = await timeRounds(api, smallAccount.token, small);
    const slowStillLoading = (await Promise.all(slowIds.map((id) => status(api, slowAccount.token, id)))).filter((s) => !ENDED.includes(s)).length;
    const slowElapsed = (Date.now() - slowStarted) / 1000;

    const worst = Math.max(...beside);
    console.log(`\nLoading fairness: account B's one-page source, alone and while account A's ${SLOW_SOURCES} sources stall (one process, ${ROUNDS} rounds)\n`);
    console.log("| round | alone (s) | beside A's stalled sources (s) |");
    console.log("|---:|---:|---:|");
    alone.forEach((a, i) => console.log(`| ${i + 1} | ${a.toFixed(2)} | ${beside[i]!.toFixed(2)} |`));
    console.log(`\nA's sources still loading after ${slowElapsed.toFixed(1)} s: ${slowStillLoading} of ${SLOW_SOURCES}`);
    console.log(`worst beside the stalled sources: ${worst.toFixed(2)} s (target < ${TARGET_SECONDS} s: ${worst < TARGET_SECONDS ? "MET" : "MISSED"})`);
    writeResults(RESULTS_FILE, { machine: machine(), slowSources: SLOW_SOURCES, aloneSeconds: alone, besideSlowSeconds: beside, slowStillLoading, worstSeconds: worst, targetSeconds: TARGET_SECONDS });
  } finally {
    await cluster?.stop();
    await Promise.all([...sites, ...servers].map((s) => s.stop()));
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
