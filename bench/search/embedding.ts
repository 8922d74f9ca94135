/**
 * Embedding throughput of a bundled model, by the wall clock: chunks/s for 1,000-character chunks with one
 * and two worker threads (EMBEDDING_WORKERS of the search service), query latency while idle, and memory.
 * The chunks are the first 1,000 characters of SciFact abstracts (title + text, as the search service embeds
 * them). The machine's load average is printed with every row, and the CPU time the process used, which
 * says what the model costs whatever else runs: chunks/s a free core gives = 1000 / CPU ms per chunk.
 *
 *   npm run bench:embedding     (EMBEDDING_MODEL=use-lite-512 for the old model; BENCH_CHUNKS, BENCH_ROUNDS)
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { DEFAULT_LOCAL_MODEL, LocalEmbeddingProvider, type LocalModelName } from "../../lib/search/embeddings";
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
  console.log(`embedding: ${MODEL}, ${texts.length} chunks of ${Math.round(texts.reduce((s, t) => s + t.length, 0) / texts.length)} characters (SciFact), median of ${ROUNDS} rounds, ${os.cpus().length} cores`);
  console.log(`load average (1 min) at start: ${os.loadavg()[0]!.toFixed(1)}`);
  console.log(
    "\n| workers | chunks/s (wall clock) | load average during | CPU ms per chunk | CPU cores used | chunks/s per free core (from CPU) | query p50 idle (ms) | RSS after (MB) |" +
      "\n|---|---|---|---|---|---|---|---|",
  );
  const before = rssMb();
  for (const workers of [1, 2]) {
    const provider = new LocalEmbeddingProvider(MODEL, { workers });
    await embedAll(provider, texts.slice(0, BATCH * workers), workers);
    const rates: number[] = [];
    const cpuPerChunk: number[] = [];
    const coresUsed: number[] = [];
    const loads: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      await embedAll(provider, texts, workers);
      const cpu = process.cpuUsage(cpu0);
      const seconds = (performance.now() - t0) / 1000;
      rates.push(texts.length / seconds);
      cpuPerChunk.push((cpu.user + cpu.system) / 1e3 / texts.length);
      coresUsed.push((cpu.user + cpu.system) / 1e6 / seconds);
      loads.push(os.loadavg()[0]!);
    }
    const latencies: number[] = [];
    for (const q of texts.slice(0, 20)) {
      const t0 = performance.now();
      await provider.embed([q.slice(0, 120)], "query");
      latencies.push(performance.now() - t0);
    }
    const perCore = 1000 / median(cpuPerChunk);
    const load = `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`;
    console.log(
      `| ${workers} | ${median(rates).toFixed(1)} | ${load} | ${median(cpuPerChunk).toFixed(1)} | ${median(coresUsed).toFixed(2)} | ${perCore.toFixed(1)} | ${median(latencies).toFixed(1)} | ${rssMb()} |`,
    );
    await provider.close();
  }
  console.log(`\nRSS before loading the model: ${before} MB (workers share the process; each holds its own model session)`);
  console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
