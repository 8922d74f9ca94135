/**
 * BEIR SciFact (test split) as the team keeps it outside the repository: SCIFACT_DIR, default
 * ../shared/eval/scifact next to the project (see its SOURCES.md; CC BY-NC 2.0, never copied in here).
 */
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "../../lib/local-mongo";

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
