/**
 * Embedding throughput of a bundled model: chunks/s for 1,000-character chunks with one and two worker
 * threads (EMBEDDING_WORKERS of the search service), query latency while idle, and memory. The chunks are
 * the first 1,000 characters of SciFact abstracts (title + text, as the search service embeds them).
 *
 *   npm run bench:embedding     (EMBEDDING_MODEL=use-lite-512 for the old model; BENCH_CHUNKS, BENCH_ROUNDS)
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { DEFAULT_LOCAL_MODEL, type LocalModelName } from "../../lib/search/models";
import { readSciFact } from "./scifact";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 16;
const MODEL = (process.env.EMBEDDING_MODEL || DEFAULT_LOCAL_MODEL) as LocalModelName;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rssMb = () => Math.round(process.memoryUsage().rss / 2 ** 20);

/** Embeds `texts` in batches of BATCH with `inFlight` batches at once, as the embedding stage does. */
async function embedAll(provider: LocalEmbeddingProvider, texts: string[], inFlight: number) {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < texts.length) {
        const start = next;
        next += BATCH;
        await provider.embed(texts.slice(start, start + BATCH), "batch");
      }
    }),
  );
}

async function main() {
  const { corpus } = readSciFact();
  const texts = corpus.slice(0, CHUNKS).map((d) => `${d.title}\n\n${d.text}`.slice(0, 1000));
  console.log(`embedding: ${MODEL}, ${texts.length} chunks of ${Math.round(texts.reduce((s, t) => s + t.length, 0) / texts.length)} characters (SciFact), median of ${ROUNDS} rounds`);
  // CPU time (all threads of the process) says what the model costs whatever else the machine runs.
  console.log(`load average at start: ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`);
  console.log("\n| workers | chunks/s | CPU ms per chunk | chunks/s per free core | query p50 idle (ms) | RSS after (MB) |\n|---|---|---|---|---|---|");
  const before = rssMb();
  for (const workers of [1, 2]) {
    const provider = new LocalEmbeddingProvider(MODEL, { workers });
    await embedAll(provider, texts.slice(0, BATCH * workers), workers);
    const rates: number[] = [];
    const cpuPerChunk: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      await embedAll(provider, texts, workers);
      const cpu = process.cpuUsage(cpu0);
      rates.push(texts.length / ((performance.now() - t0) / 1000));
      cpuPerChunk.push((cpu.user + cpu.system) / 1e3 / texts.length);
    }
    const latencies: number[] = [];
    for (const q of texts.slice(0, 20)) {
      const t0 = performance.now();
      await provider.embed([q.slice(0, 120)], "query");
      latencies.push(performance.now() - t0);
    }
    const perCore = 1000 / median(cpuPerChunk);
    console.log(`| ${workers} | ${median(rates).toFixed(1)} | ${median(cpuPerChunk).toFixed(1)} | ${perCore.toFixed(1)} | ${median(latencies).toFixed(1)} | ${rssMb()} |`);
    await provider.close();
  }
  console.log(`\nRSS before loading the model: ${before} MB (workers share the process; each holds its own model session)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
