import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import mongoose from "mongoose";
import { positiveIntEnv } from "../lib/env";
import { startCluster, type Cluster } from "../test/harness/cluster";
import { startChangingSite, type ChangingSite, type PageValidatorKind } from "../test/harness/fixture-site";
import { apiClient, signup } from "../test/harness/http";
import type { RunningServer } from "../test/harness/servers";
import { startInProcessServers } from "./in-process";
import { machine, writeResults } from "./report";

/**
 * Knowledge refresh bench (the refresh issue's target): a loopback sitemap site of BENCH_PAGES (2,000) pages is
 * loaded, then 1% of its pages change and 1% are removed, and the source's scheduled refresh runs. The refresh
 * must take under 10% of the first load's time, embed only the changed pages' chunks, and end with exactly the
 * site's page set. Times are the loader's own (last_refresh.duration_ms); BENCH_ROUNDS (3) rounds, medians;
 * BENCH_VALIDATORS picks how pages tell that they did not change (etag by default).
 *
 * Everything runs in this process on one broker (no transporter), with the fixture site and an
 * OpenAI-compatible embeddings endpoint on 127.0.0.1 that counts the texts it embeds (deterministic vectors).
 */

const ROOT = path.resolve(__dirname, "..", "..");
const RESULTS_FILE = path.join(ROOT, "bench", "results", "knowledge-refresh.json");
const PAGES = positiveIntEnv(process.env, "BENCH_PAGES", 2000);
const ROUNDS = positiveIntEnv(process.env, "BENCH_ROUNDS", 3);
const CHANGED_SHARE = 0.01;
const REMOVED_SHARE = 0.01;
const DIMENSIONS = 32;
/**
 * How the site's pages tell a refresh they did not change: etag (ETag and Last-Modified, answered with 304),
 * lastmod (also a sitemap <lastmod>: not fetched at all), none (only the content hash), or mixed (a third each).
 */
const VALIDATORS = (process.env.BENCH_VALIDATORS ?? "etag") as PageValidatorKind | "mixed";
/** The target: a refresh takes under this share of the first load's time. */
const TARGET_RATIO = 0.1;
const LOAD_TIMEOUT_MS = positiveIntEnv(process.env, "BENCH_LOAD_TIMEOUT", 600) * 1000;
const POLL_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** An OpenAI-compatible embeddings endpoint: a vector per text from its characters, and a count of texts. */
async function startEmbeddings(): Promise<{ url: string; texts: () => number; stop(): Promise<void> }> {
  let texts = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const input = (JSON.parse(body) as { input: string[] }).input;
      texts += input.length;
      const data = input.map((text, index) => {
        const v = new Array<number>(DIMENSIONS).fill(0.001);
        for (let i = 0; i < text.length; i++) v[i % DIMENSIONS]! += text.charCodeAt(i) / 1000;
        return { index, embedding: v };
      });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ data }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    texts: () => texts,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface SourceView {
  id: number;
  loading_status: string;
  document_count: number;
  last_refresh: { job_id: string; duration_ms: number; new: number; changed: number; unchanged: number; removed: number; failed: number } | null;
}

interface Round {
  firstLoadSeconds: number;
  refreshSeconds: number;
  ratio: number;
  firstPagesPerSecond: number;
  refreshPagesPerSecond: number;
  changedPages: number;
  removedPages: number;
  changedPagesChunks: number;
  textsEmbeddedByRefresh: number;
  counts: NonNullable<SourceView["last_refresh"]>;
  exactDocumentSet: boolean;
}

async function runRound(cluster: Cluster, db: mongoose.Connection, embeddings: Awaited<ReturnType<typeof startEmbeddings>>, round: number): Promise<Round> {
  const api = apiClient(cluster.baseUrl);
  const { token } = await signup(api, `refresh-bench-${round}`);
  const call = (method: string, p: string, body?: unknown) => api(method, `/api/v1${p}`, { token, body });
  const source = async (id: number) => (await call("GET", `/knowledge/${id}`)).body as SourceView;
  const until = async (id: number, ok: (s: SourceView) => boolean) => {
    const deadline = Date.now() + LOAD_TIMEOUT_MS;
    for (;;) {
      const s = await source(id);
      if (ok(s)) return s;
      if (Date.now() > deadline) throw new Error(`source ${id} did not finish in ${LOAD_TIMEOUT_MS / 1000} s: ${JSON.stringify(s)}`);
      await sleep(POLL_MS);
    }
  };
  const embeddingsSettled = async () => {
    for (;;) {
      const stats = (await call("GET", "/knowledge/documents/stats")).body as { total_chunks: number; embedded_chunks: number };
      if (stats.total_chunks > 0 && stats.embedded_chunks === stats.total_chunks) return;
      await sleep(POLL_MS);
    }
  };
  const documents = async (id: number) => {
    const all: { url: string; chunk_count: number }[] = [];
    for (let skip = 0; ; skip += 200) {
      const page = (await call("GET", `/knowledge/documents?source_id=${id}&skip=${skip}&limit=200`)).body as { data: { url: string; chunk_count: number }[] };
      all.push(...page.data);
      if (page.data.length < 200) return all;
    }
  };

  // A different text per round, so no round finds its chunks in the embedding cache of an earlier one.
  const site: ChangingSite = await startChangingSite(PAGES, { validators: VALIDATORS, seed: round });
  try {
    const created = await call("POST", "/knowledge", { paths: [site.baseUrl], data_type: "sitemap", refresh: { interval_seconds: 86_400 } });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
    const id = created.body.id as number;
    const first = await until(id, (s) => s.loading_status === "loaded" || s.loading_status === "failed" || s.loading_status === "partial");
    if (first.document_count !== PAGES) throw new Error(`first load indexed ${first.document_count} of ${PAGES} pages`);
    await embeddingsSettled();

    // 1% changed, 1% removed, spread over the site (and over the three kinds of validators).
    const step = Math.round(1 / CHANGED_SHARE);
    const changed = Array.from({ length: Math.round(PAGES * CHANGED_SHARE) }, (_, i) => i * step + 1);
    const removed = Array.from({ length: Math.round(PAGES * REMOVED_SHARE) }, (_, i) => i * step + 2);
    for (const n of changed) site.change(n);
    for (const n of removed) site.remove(n);
    const textsBefore = embeddings.texts();

    await db.collection("knowledge_sources").updateOne({ _id: id as never }, { $set: { next_refresh_at: new Date(Date.now() - 1000) } });
    const refreshed = await until(id, (s) => s.last_refresh?.job_id !== first.last_refresh!.job_id && s.loading_status !== "loading");
    await embeddingsSettled();
    const textsEmbeddedByRefresh = embeddings.texts() - textsBefore;

    const docs = await documents(id);
    const urls = docs.map((d) => d.url).sort();
    const changedUrls = new Set(changed.map((n) => site.urlOf(n)));
    const changedPagesChunks = docs.filter((d) => changedUrls.has(d.url)).reduce((sum, d) => sum + d.chunk_count, 0);
    const expected = site.listed();
    const firstSeconds = first.last_refresh!.duration_ms / 1000;
    const refreshSeconds = refreshed.last_refresh!.duration_ms / 1000;
    return {
      firstLoadSeconds: firstSeconds,
      refreshSeconds,
      ratio: refreshSeconds / firstSeconds,
      firstPagesPerSecond: PAGES / firstSeconds,
      refreshPagesPerSecond: expected.length / refreshSeconds,
      changedPages: changed.length,
      removedPages: removed.length,
      changedPagesChunks,
      textsEmbeddedByRefresh,
      counts: refreshed.last_refresh!,
      exactDocumentSet: urls.length === expected.length && urls.every((u, i) => u === expected[i]),
    };
  } finally {
    await site.stop();
  }
}

async function main() {
  const servers: RunningServer[] = [];
  const embeddings = await startEmbeddings();
  let cluster: Cluster | undefined;
  let db: mongoose.Connection | undefined;
  try {
    servers.push(
      ...(await startInProcessServers({
        EMBEDDING_PROVIDER: "openai",
        EMBEDDING_URL: embeddings.url,
        EMBEDDING_MODEL: "bench-embeddings",
        EMBEDDING_DIMENSIONS: String(DIMENSIONS),
        SCHEDULER_POLL_MS: "200",
      })),
    );
    cluster = await startCluster({ database: "bench_knowledge_refresh", embedded: true });
    db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    const rounds: Round[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const round = await runRound(cluster, db, embeddings, r);
      console.log(`round ${r}: first load ${round.firstLoadSeconds.toFixed(2)} s, refresh ${round.refreshSeconds.toFixed(2)} s, counts ${JSON.stringify(round.counts)}`);
      rounds.push(round);
    }
    const of = (pick: (r: Round) => number) => median(rounds.map(pick));
    const ratio = of((r) => r.ratio);
    const embeddedOnlyChanged = rounds.every((r) => r.textsEmbeddedByRefresh <= r.changedPagesChunks);
    const exact = rounds.every((r) => r.exactDocumentSet);
    console.log(
      `\nKnowledge refresh: ${PAGES}-page loopback sitemap site (validators: ${VALIDATORS}), ${CHANGED_SHARE * 100}% changed, ` +
        `${REMOVED_SHARE * 100}% removed; medians of ${ROUNDS} rounds\n`,
    );
    console.log("| load | seconds | pages/s |");
    console.log("|---|---:|---:|");
    console.log(`| first load | ${of((r) => r.firstLoadSeconds).toFixed(2)} | ${Math.round(of((r) => r.firstPagesPerSecond))} |`);
    console.log(`| refresh | ${of((r) => r.refreshSeconds).toFixed(2)} | ${Math.round(of((r) => r.refreshPagesPerSecond))} |`);
    console.log(
      `\nrefresh ÷ first load: ${ratio.toFixed(3)} (target < ${TARGET_RATIO}: ${ratio < TARGET_RATIO ? "MET" : "MISSED"}); ` +
        `texts embedded by the refresh: ${rounds.map((r) => r.textsEmbeddedByRefresh).join(", ")} ` +
        `(changed pages' chunks: ${rounds.map((r) => r.changedPagesChunks).join(", ")}; ${embeddedOnlyChanged ? "MET" : "MISSED"}); ` +
        `exact document set: ${exact ? "MET" : "MISSED"}`,
    );
    writeResults(RESULTS_FILE, { machine: machine(), pages: PAGES, validators: VALIDATORS, rounds, medians: { ratio, firstLoadSeconds: of((r) => r.firstLoadSeconds), refreshSeconds: of((r) => r.refreshSeconds) } });
  } finally {
    await db?.close();
    await cluster?.stop();
    await embeddings.stop();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
