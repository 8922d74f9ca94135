import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startLocalMongo } from "../lib/local-mongo";
import { startMongo, startNats, type RunningServer } from "../test/harness/servers";
import { runBench, type Lifecycle } from "./lifecycle";
import { stopAll } from "./processes";
import { machine, writeResults } from "./report";
import { describeCpu } from "./knowledge/platform";
import { embedding, resume, throughput, type ThroughputResult } from "./knowledge/scenarios";
import { DEFAULT_CHUNKS_PER_PAGE, KILL_AT, LOADER_COUNTS, LOADER_KNOBS, PAGES, POLL_MS, RESULTS_FILE, ROOT, round, RUN_BUDGET_MS, SCENARIOS, SOURCES, TARGET } from "./knowledge/settings";
import { startBenchSite } from "./knowledge/site";

/**
 * Knowledge-loading bench (the knowledge-loading issue's target): pages per second per loader replica for a
 * local sitemap site (fetch + parse + chunk + store, embeddings off), with one and with two loader replicas,
 * the time to resume after a loader is killed, and, separately, the local embedding model's rate.
 * Everything runs on loopback: nats-server, the MongoDB-compatible server, a generated site, and the
 * platform as `node dist/server.js` processes over NATS.
 *
 * Settings (environment): BENCH_PAGES (2000), BENCH_SOURCES (4), BENCH_LOADERS ("1,2"), BENCH_ONLY
 * ("throughput,resume,embedding"), BENCH_LEASE_SECONDS (10), BENCH_EMBED_CHUNKS (200), BENCH_LOAD_TIMEOUT
 * (seconds per scenario), BENCH_MONGO_BINARY (another build of the local MongoDB-compatible server),
 * BENCH_CPU_PROF (a directory for the platform processes' V8 CPU profiles). Loader knobs such as
 * LOAD_BATCH_SIZE and LOAD_PER_HOST_CONCURRENCY pass through to the platform processes and are reported.
 */

interface Row {
  scenario: string;
  loaders: number;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  /** From the first poll that saw progress to the end: excludes sitemap listing and the first claim. */
  steadyPagesPerSecond: number | null;
  pagesPerSecondPerLoader: number | null;
  target: string;
}

// ---------------------------------------------------------------- report

function markdownTable(rows: Row[]): string {
  const fmt = (n: number | null) => (n === null ? "—" : n >= 100 ? String(Math.round(n)) : n.toFixed(1));
  return [
    "| scenario | loaders | pages | seconds | pages/s | pages/s after first batch | pages/s per loader | target |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map((r) => `| ${r.scenario} | ${r.loaders} | ${r.pages} | ${r.seconds.toFixed(1)} | ${fmt(r.pagesPerSecond)} | ${fmt(r.steadyPagesPerSecond)} | ${fmt(r.pagesPerSecondPerLoader)} | ${r.target} |`),
  ].join("\n");
}

function throughputRows(results: ThroughputResult[]): Row[] {
  const single = results.find((r) => r.loaders === 1);
  return results.map((r) => {
    const perLoader = r.pagesPerSecond / r.loaders;
    const verdicts = [perLoader >= TARGET.pagesPerSecondPerLoader ? `per loader ≥ ${TARGET.pagesPerSecondPerLoader}: met` : `per loader ≥ ${TARGET.pagesPerSecondPerLoader}: MISSED`];
    if (r.loaders > 1 && single) {
      const scaling = r.pagesPerSecond / single.pagesPerSecond;
      verdicts.push(`${scaling.toFixed(2)}× one loader (needs ≥ ${(TARGET.minScaling * r.loaders) / 2}×): ${scaling >= (TARGET.minScaling * r.loaders) / 2 ? "met" : "MISSED"}`);
    }
    if (!r.ok) verdicts.push(`INCOMPLETE (${r.problems.length} problem(s), below)`);
    return {
      scenario: `throughput (${r.sources.length} sources)`,
      loaders: r.loaders,
      pages: r.pages,
      seconds: r.seconds,
      pagesPerSecond: r.pagesPerSecond,
      steadyPagesPerSecond: r.steadyPagesPerSecond,
      pagesPerSecondPerLoader: round(perLoader),
      target: verdicts.join("; "),
    };
  });
}

// ---------------------------------------------------------------- main

/**
 * The database: as the test harness picks it (MONGO_URL, a mongo container, else the local MongoDB-compatible
 * server), or BENCH_MONGO_BINARY, another build of the local server (e.g. a patched one), to compare databases.
 */
async function startDatabase(): Promise<RunningServer & { kind: string }> {
  const binary = process.env.BENCH_MONGO_BINARY;
  if (!binary) return startMongo();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-mongo-"));
  const local = await startLocalMongo({ dataDir, binary });
  return {
    kind: `local MongoDB-compatible server built at ${binary}`,
    url: local.url,
    async stop() {
      await local.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function main({ own, startWatchdog }: Lifecycle) {
  const host = machine();
  const nats = own(await startNats());
  const mongo = own(await startDatabase());
  const site = own(await startBenchSite());
  console.error(`NATS ${nats.url}; MongoDB (${mongo.kind}) ${mongo.url}; site ${site.baseUrl}; budget ${Math.round(RUN_BUDGET_MS / 1000)} s`);
  const disarmWatchdog = startWatchdog(RUN_BUDGET_MS);
  const infra = { nats: nats.url, mongo: mongo.url };

  // A scenario that fails is reported as such and the others still run: a partial table says more than none.
  const errors: { scenario: string; loaders: number; error: string }[] = [];
  const attempt = async <T>(scenario: string, loaders: number, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      console.error(`${scenario} FAILED: ${message}`);
      errors.push({ scenario, loaders, error: message.split("\n")[0]! });
      await stopAll();
      return undefined;
    }
  };
  const throughputs: ThroughputResult[] = [];
  if (SCENARIOS.has("throughput")) {
    for (const loaders of LOADER_COUNTS) {
      const result = await attempt(`throughput-${loaders}`, loaders, () => throughput(infra, site, loaders));
      if (result) throughputs.push(result);
    }
  }
  const resumed = SCENARIOS.has("resume") ? await attempt("resume", 1, () => resume(infra, site)) : undefined;
  const measured = throughputs.find((t) => t.indexedDocuments > 0);
  const chunksPerPage = measured ? measured.chunks / measured.indexedDocuments : DEFAULT_CHUNKS_PER_PAGE;
  const embedded = SCENARIOS.has("embedding") ? await attempt("embedding", 1, () => embedding(infra, site, chunksPerPage)) : undefined;
  disarmWatchdog();

  const rows = throughputRows(throughputs);
  if (resumed) {
    rows.push({
      scenario: `resume (SIGKILL at ${Math.round(KILL_AT * 100)}%, lease ${resumed.leaseSeconds} s)`,
      loaders: 1,
      pages: resumed.final.loading_urls_done,
      seconds: resumed.totalSeconds,
      pagesPerSecond: resumed.pagesPerSecond,
      steadyPagesPerSecond: null,
      pagesPerSecondPerLoader: null,
      target: `resumed ${resumed.resumeSeconds.toFixed(1)} s after the kill; documents ${resumed.documents.distinct}/${resumed.pages} distinct: ${resumed.ok ? "ok" : "FAILED"}`,
    });
  }
  if (embedded) {
    rows.push({
      scenario: `embedding, local model (${embedded.chunks} chunks)`,
      loaders: 1,
      pages: embedded.pages,
      seconds: embedded.embeddingSeconds,
      pagesPerSecond: round(embedded.pages / embedded.embeddingSeconds),
      steadyPagesPerSecond: null,
      pagesPerSecondPerLoader: null,
      target: `${embedded.chunksPerSecond} chunks/s (reported separately, no target)`,
    });
  }

  for (const e of errors) {
    rows.push({ scenario: e.scenario, loaders: e.loaders, pages: 0, seconds: 0, pagesPerSecond: 0, steadyPagesPerSecond: null, pagesPerSecondPerLoader: null, target: `FAILED: ${e.error}` });
  }

  const knobs = Object.fromEntries(LOADER_KNOBS.filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
  console.log(
    `\nmachine: nproc ${host.nproc}, ${host.cpu}, node ${host.node}, ${host.platform}; load average ${host.loadAverage1mBefore} before the run, ` +
      `${os.loadavg().map((l) => l.toFixed(2)).join(" ")} after; the site, NATS, the database and every platform process share these cores`,
  );
  console.log(
    `site: ${PAGES} pages of ~${Math.round(site.averagePageBytes / 1000)} KB HTML, split into ${SOURCES} sitemap sources for throughput; database ${mongo.kind}; ` +
      `EMBEDDING_PROVIDER=none except the embedding row; loader settings ${Object.keys(knobs).length ? JSON.stringify(knobs) : "the platform's defaults"}`,
  );
  console.log(
    "seconds: from the POST that creates the sources to the poll (every 250 ms) that sees the last one loaded, so they include " +
      "sitemap listing and the loader's claim of the job; 'after first batch' counts from the first poll that saw loading_urls_done > 0.\n",
  );
  console.log(markdownTable(rows));
  for (const t of throughputs) {
    console.log(`\n${t.loaders} loader(s): ${describeCpu(t.cpu, t.seconds)}; ${t.chunks} chunks of ${t.indexedDocuments} documents (${(t.chunks / Math.max(1, t.indexedDocuments)).toFixed(1)} per page)`);
    console.log(`  per source: ${t.perSource.map((s) => `#${s.id} ${s.pages} pages ${s.status}${s.seconds === null ? "" : ` after ${s.seconds} s`}`).join(", ")}`);
    for (const problem of t.problems) console.log(`  INCOMPLETE: ${problem}`);
  }
  if (resumed) {
    console.log(
      `\nresume: killed at ${resumed.killedAtDone}/${resumed.pages} pages shown (${resumed.persistedAtKill} saved), ${resumed.killedAfterSeconds} s in; ` +
        `replacement loader ready ${resumed.replacementReadySeconds} s after the kill, progress again after ${resumed.resumeSeconds} s ` +
        `(LOAD_LEASE_SECONDS=${resumed.leaseSeconds}); total ${resumed.totalSeconds} s; ${resumed.pagesRefetched} pages fetched twice`,
    );
    console.log(
      `resume check: status ${resumed.final.loading_status}, document_count ${resumed.final.document_count} (expected ${resumed.pages}), ` +
        `loading_urls_done ${resumed.final.loading_urls_done}, documents listed ${resumed.documents.listed}, distinct URLs ${resumed.documents.distinct}: ` +
        `${resumed.ok ? "OK, no lost or duplicated documents" : "FAILED"}`,
    );
  }
  if (embedded) {
    console.log(
      `\nembedding (measured through the API: GET /api/v1/knowledge/documents/stats embedded_chunks vs total_chunks): ${embedded.chunks} chunks of ≤ 1000 characters ` +
        `from ${embedded.pages} pages embedded in ${embedded.embeddingSeconds} s = ${embedded.chunksPerSecond} chunks/s ` +
        `(≈ ${(embedded.chunksPerSecond / chunksPerPage).toFixed(1)} pages/s at ${chunksPerPage.toFixed(1)} chunks per page); the load itself took ${embedded.loadSeconds} s; ` +
        `model warm-up ${embedded.modelWarmUpSeconds} s (excluded)`,
    );
    console.log(`embedding: ${describeCpu(embedded.cpu, embedded.embeddingSeconds)}`);
  }

  writeResults(RESULTS_FILE, {
    date: new Date().toISOString(),
    machine: { ...host, loadAverageAfter: os.loadavg().map((l) => round(l, 2)) },
    database: mongo.kind,
    pages: PAGES,
    sources: SOURCES,
    averagePageBytes: site.averagePageBytes,
    loaderSettings: knobs,
    target: TARGET,
    pollMs: POLL_MS,
    rows,
    throughput: throughputs.map(({ timeline, sources, ...rest }) => ({ ...rest, sourceSizes: sources, sourceViews: timeline.sources })),
    resume: resumed,
    embedding: embedded,
    errors,
  });
  console.log(`\nresults written to ${path.relative(ROOT, RESULTS_FILE)}`);
  const failed = [
    ...throughputs.filter((t) => !t.ok).map((t) => `throughput-${t.loaders}`),
    ...(resumed && !resumed.ok ? ["resume"] : []),
    ...(embedded && !embedded.ok ? ["embedding"] : []),
    ...errors.map((e) => e.scenario),
  ];
  if (failed.length) throw new Error(`incomplete scenarios: ${failed.join(", ")}`);
}

runBench(main);
