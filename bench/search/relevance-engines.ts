/**
 * BEIR SciFact through the SearchIndex port of both engines: the corpus is chunked as the search service
 * chunks documents, each of the 300 test queries ranks chunks, documents take their best chunk's rank,
 * and nDCG@10 and recall@100 are printed per engine and mode. Typesense is the test harness's
 * typesense-server (or TYPESENSE_URL's). Semantic and hybrid embed the corpus with the bundled model
 * (minutes on two cores; the vectors are kept in .cache/bench/ for the next run, keyed by model and texts):
 * RELEVANCE_MODES=keyword measures keyword alone.
 *
 *   npm run bench:search:engines      (SCIFACT_DIR, default ../shared/eval/scifact)
 */
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { randomBytes } from "node:crypto";
import { HYBRID_ALPHA_BY_MODEL, MIN_SIMILARITY_BY_MODEL } from "../../lib/search/config";
import { EmbeddedEngine } from "../../lib/search/embedded/engine";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS } from "../../lib/search/models";
import { DEFAULT_HYBRID_ALPHA } from "../../lib/search/fusion";
import { SEARCH_MODES, type SearchIndex, type SearchMode } from "../../lib/search/port";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { startTypesense } from "../../test/harness/servers";
import { collapseByDocument } from "../../services/search/rules";
import { sciFactChunks, sciFactDir, sciFactVectors } from "./scifact";

const DIR = sciFactDir();
const MODES = (process.env.RELEVANCE_MODES ?? SEARCH_MODES.join(",")).split(",") as SearchMode[];
const ACCOUNT = 1;
const DEPTH = 250;
/** The bundled model's vector size, and the hybrid weight the search service gives it. */
const DIMENSIONS = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dimensions;
const ALPHA = HYBRID_ALPHA_BY_MODEL[DEFAULT_LOCAL_MODEL] ?? DEFAULT_HYBRID_ALPHA;

const jsonl = <T>(file: string): T[] =>
  fs.readFileSync(path.join(DIR, file), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as T);

/** qrels: query id -> relevant document id -> grade. */
function qrels(): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const line of fs.readFileSync(path.join(DIR, "qrels-test.tsv"), "utf8").split("\n").slice(1)) {
    const [q, d, g] = line.split("\t");
    if (!q || !d) continue;
    if (!out.has(q)) out.set(q, new Map());
    out.get(q)!.set(d, Number(g));
  }
  return out;
}

function ndcgAt10(ranked: string[], relevant: Map<string, number>): number {
  const dcg = (gains: number[]) => gains.reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
  const ideal = dcg([...relevant.values()].sort((a, b) => b - a).slice(0, 10));
  return ideal ? dcg(ranked.slice(0, 10).map((d) => relevant.get(d) ?? 0)) / ideal : 0;
}

function recallAt100(ranked: string[], relevant: Map<string, number>): number {
  const top = new Set(ranked.slice(0, 100));
  return [...relevant.keys()].filter((d) => top.has(d)).length / relevant.size;
}

async function main() {
  const corpus = jsonl<{ _id: string; title: string; text: string }>("corpus.jsonl");
  const judged = qrels();
  const queries = jsonl<{ _id: string; text: string }>("queries.jsonl").filter((q) => judged.has(q._id));
  const wantsVectors = MODES.some((m) => m !== "keyword");
  const provider = wantsVectors ? new LocalEmbeddingProvider() : undefined;

  const chunks = sciFactChunks(corpus, ACCOUNT);
  const queryVectors: (Float32Array | null)[] = queries.map(() => null);
  if (provider) {
    const vectors = await sciFactVectors(provider, chunks, queries.map((q) => q.text));
    queries.forEach((_, i) => (queryVectors[i] = vectors[i]!));
    await provider.close();
  }

  const typesense = await startTypesense();
  const engines: SearchIndex[] = [
    new EmbeddedEngine({ dimensions: DIMENSIONS }),
    new TypesenseEngine({ url: typesense.url, apiKey: typesense.apiKey, collection: `scifact_${randomBytes(4).toString("hex")}`, dimensions: DIMENSIONS }),
  ];
  const rows: string[] = [];
  try {
    for (const engine of engines) {
      await engine.start();
      for (let i = 0; i < chunks.length; i += 1000) await engine.upsertChunks(chunks.slice(i, i + 1000));
      for (const mode of MODES) {
        let ndcg = 0;
        let recall = 0;
        const t0 = performance.now();
        for (const [i, q] of queries.entries()) {
          const res = await engine.search({
            accountId: ACCOUNT, text: q.text, mode, vector: queryVectors[i]!, depth: DEPTH, alpha: ALPHA,
            maxDistance: 1 - (MIN_SIMILARITY_BY_MODEL[DEFAULT_LOCAL_MODEL] ?? -1),
          });
          const ranked = collapseByDocument(res.hits).map((h) => h.documentId);
          ndcg += ndcgAt10(ranked, judged.get(q._id)!);
          recall += recallAt100(ranked, judged.get(q._id)!);
        }
        const ms = (performance.now() - t0) / queries.length;
        rows.push(`| ${engine.engine === "typesense" ? typesense.kind : "embedded"} | ${mode} | ${(ndcg / queries.length).toFixed(3)} | ${(recall / queries.length).toFixed(3)} | ${ms.toFixed(1)} |`);
      }
      if (engine instanceof TypesenseEngine) await engine.dropCollection();
      await engine.stop();
    }
  } finally {
    await typesense.stop();
  }
  console.log(`\nBEIR SciFact (${corpus.length} documents, ${chunks.length} chunks, ${queries.length} test queries), depth ${DEPTH}, hybrid alpha ${ALPHA}`);
  console.log("\n| engine | mode | nDCG@10 | recall@100 | ms/query |\n|---|---|---|---|---|");
  for (const r of rows) console.log(r);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
