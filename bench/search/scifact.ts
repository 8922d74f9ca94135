/**
 * BEIR SciFact (test split) as the team keeps it outside the repository: SCIFACT_DIR, default
 * ../shared/eval/scifact next to the project (see its SOURCES.md; CC BY-NC 2.0, never copied in here).
 */
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { createHash } from "node:crypto";
import { chunkText } from "../../lib/search/chunking";
import type { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import type { IndexedChunk } from "../../lib/search/port";
import { repoRoot } from "../../lib/local-mongo";
import { embedText } from "../../services/search/rules";

export interface SciFactDocument {
  _id: string;
  title: string;
  text: string;
}

export interface SciFact {
  corpus: SciFactDocument[];
  queries: { _id: string; text: string }[];
  /** Query id → relevant corpus ids (all judgements are grade 1). */
  qrels: Map<string, Set<string>>;
}

/** SCIFACT_DIR, else shared/eval/scifact next to the checkout, or next to the repository above a worktree. */
export function sciFactDir(): string {
  if (process.env.SCIFACT_DIR) return path.resolve(process.env.SCIFACT_DIR);
  const candidates = [path.resolve(repoRoot(), "..", "shared"), path.resolve(repoRoot(), "..", "..", "shared")].map((d) => path.join(d, "eval", "scifact"));
  return candidates.find((d) => fs.existsSync(d)) ?? candidates[0]!;
}

const jsonLines = <T>(file: string): T[] =>
  fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as T);

export function readSciFact(): SciFact {
  const dir = sciFactDir();
  if (!fs.existsSync(path.join(dir, "corpus.jsonl"))) throw new Error(`SciFact not found in ${dir}: set SCIFACT_DIR`);
  const qrels = new Map<string, Set<string>>();
  for (const line of fs.readFileSync(path.join(dir, "qrels-test.tsv"), "utf8").split("\n").slice(1)) {
    const [query, doc, score] = line.trim().split("\t");
    if (!query || !doc || !(Number(score) > 0)) continue;
    if (!qrels.has(query)) qrels.set(query, new Set());
    qrels.get(query)!.add(doc);
  }
  return {
    corpus: jsonLines<SciFactDocument>(path.join(dir, "corpus.jsonl")),
    queries: jsonLines<{ _id: string; text: string }>(path.join(dir, "queries.jsonl")),
    qrels,
  };
}

/** The corpus chunked as the search service chunks documents (one source, no vectors yet). */
export function sciFactChunks(corpus: SciFactDocument[], accountId: number): IndexedChunk[] {
  return corpus.flatMap((d) =>
    chunkText(d.text).map((c) => ({
      id: `${d._id}-${c.position}`, accountId, sourceId: 1, documentId: d._id, position: c.position,
      title: d.title, url: `scifact:${d._id}`, content: c.text, vector: null, indexedAt: 0,
    })),
  );
}

/**
 * Sets the chunks' vectors and returns the queries' (embedded as the service embeds them), from .cache/bench/
 * when an earlier run embedded the same texts with the same model, else embedded (minutes) and kept there.
 */
export async function sciFactVectors(provider: LocalEmbeddingProvider, chunks: IndexedChunk[], queries: string[]): Promise<Float32Array[]> {
  const texts = [...chunks.map((c) => embedText(c.title, c.content)), ...queries];
  const documents = chunks.length;
  const key = createHash("sha256").update(provider.model).update(JSON.stringify(texts)).update(String(documents)).digest("hex").slice(0, 16);
  const file = path.join(repoRoot(), ".cache", "bench", `scifact-${provider.model}-${key}.f32`);
  const dims = provider.dimensions;
  let vectors: Float32Array[] | undefined;
  if (fs.existsSync(file)) {
    const all = new Float32Array(new Uint8Array(fs.readFileSync(file)).buffer);
    if (all.length === texts.length * dims) {
      console.log(`vectors of ${texts.length} texts from ${path.relative(repoRoot(), file)}`);
      vectors = texts.map((_, i) => all.slice(i * dims, (i + 1) * dims));
    }
  }
  if (!vectors) {
    const t0 = performance.now();
    vectors = [];
    for (let i = 0; i < documents; i += 64) vectors.push(...(await provider.embed(texts.slice(i, Math.min(i + 64, documents)), "batch")));
    vectors.push(...(await provider.embed(texts.slice(documents), "query")));
    console.log(`embedded ${documents} chunks and ${texts.length - documents} queries in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    const all = new Float32Array(texts.length * dims);
    vectors.forEach((v, i) => all.set(v, i * dims));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, new Uint8Array(all.buffer));
  }
  chunks.forEach((c, i) => (c.vector = vectors[i]!));
  return vectors.slice(documents);
}
