/**
 * The platform's search cost on BEIR SciFact, the same queries through each engine and through raw
 * Typesense: p50 / p99 at 1 and 8 clients, queries/s, and CPU ms per query of this process (the platform's
 * side) and of typesense-server, from /proc/<pid>/stat. The raw baseline is Typesense's default search over
 * the same documents: a plain collection (title, text; one document per abstract), `q` = the query text,
 * `query_by: title,text`, per_page 20, default typo, prefix and token-dropping settings, responses
 * uncompressed as the platform reads them; its hybrid adds the 100 nearest vectors in the same multi_search. Part of `npm run bench:search` (BENCH_SCIFACT=0 skips it).
 */
import { randomBytes } from "node:crypto";
import { Client } from "typesense";
import { HYBRID_ALPHA_BY_MODEL, MIN_SIMILARITY_BY_MODEL } from "../../lib/search/config";
import { EmbeddedEngine } from "../../lib/search/embedded/engine";
import { LocalEmbeddingProvider } from "../../lib/search/embeddings";
import { DEFAULT_HYBRID_ALPHA } from "../../lib/search/fusion";
import { DEFAULT_LOCAL_MODEL, LOCAL_MODELS } from "../../lib/search/models";
import type { IndexQuery, SearchIndex, SearchMode } from "../../lib/search/port";
import { TypesenseEngine, UNCOMPRESSED } from "../../lib/search/typesense/engine";
import { collectionNames } from "../../lib/search/typesense/schema";
import { startTypesense } from "../../test/harness/servers";
import { latency, type Latency } from "./latency";
import { readSciFact, sciFactChunks, sciFactVectors } from "./scifact";

const ACCOUNT = 1;
/** The search service's depth for a first page of up to 33 documents. */
const DEPTH = 100;
const CLIENTS = [1, 8];
const WARM_UP = 30;
const DIMENSIONS = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].dimensions;

interface Row {
  engine: string;
  mode: string;
  clients: number;
  l: Latency;
}

const ms = (v: number | undefined) => (v === undefined ? "-" : v.toFixed(1));

export async function sciFactSpeed() {
  const { corpus, queries: all, qrels } = readSciFact();
  const queries = all.filter((q) => qrels.has(q._id));
  const chunks = sciFactChunks(corpus, ACCOUNT);
  const provider = new LocalEmbeddingProvider();
  const vectors = await sciFactVectors(provider, chunks, queries.map((q) => q.text));
  await provider.close();
  const engines = (process.env.BENCH_ENGINES ?? "embedded,typesense,raw").split(",");
  const indexQueries = (mode: SearchMode): IndexQuery[] =>
    queries.map((q, i) => ({
      accountId: ACCOUNT, text: q.text, mode, vector: vectors[i]!, depth: DEPTH,
      alpha: HYBRID_ALPHA_BY_MODEL[DEFAULT_LOCAL_MODEL] ?? DEFAULT_HYBRID_ALPHA, maxDistance: 1 - (MIN_SIMILARITY_BY_MODEL[DEFAULT_LOCAL_MODEL] ?? -1),
    }));
  const rows: Row[] = [];
  const measure = async (engine: string, mode: string, search: (q: IndexQuery) => Promise<unknown>, qs: IndexQuery[], pid?: number) => {
    await latency(search, qs.slice(0, WARM_UP), 1);
    for (const clients of CLIENTS) rows.push({ engine, mode, clients, l: await latency(search, qs, clients, pid) });
  };
  const modes: SearchMode[] = ["keyword", "semantic", "hybrid"];

  if (engines.includes("embedded")) {
    const embedded = new EmbeddedEngine({ dimensions: DIMENSIONS });
    for (let i = 0; i < chunks.length; i += 1000) await embedded.upsertChunks(chunks.slice(i, i + 1000));
    for (const mode of modes) await measure("embedded (in this process)", mode, (q) => embedded.search(q), indexQueries(mode));
    await embedded.stop();
  }

  const server = await startTypesense();
  const collection = `speed_${randomBytes(4).toString("hex")}`;
  const platform = new TypesenseEngine({ url: server.url, apiKey: server.apiKey, collection, dimensions: DIMENSIONS });
  // Uncompressed responses, as the platform asks for them: the baseline pays for no gzip either.
  const client = new Client({ nodes: [{ url: server.url }] as never, apiKey: server.apiKey, connectionTimeoutSeconds: 30, additionalHeaders: UNCOMPRESSED });
  const plain = `${collection}_plain`;
  try {
    await platform.start();
    for (let i = 0; i < chunks.length; i += 1000) await platform.upsertChunks(chunks.slice(i, i + 1000));
    if (engines.includes("typesense")) {
      for (const mode of modes) await measure(`platform on ${server.kind}`, mode, (q) => platform.search(q), indexQueries(mode), server.pid);
    }
    if (engines.includes("raw")) {
      await client.collections().create({ name: plain, fields: [{ name: "title", type: "string" }, { name: "text", type: "string" }] });
      await client.collections(plain).documents().import(corpus.map((d) => ({ id: d._id, title: d.title, text: d.text })), { action: "upsert" });
      const keyword = { q: "", query_by: "title,text", per_page: 20 };
      await measure("raw Typesense, default search", "keyword", (q) => client.collections(plain).documents().search({ ...keyword, q: q.text }), indexQueries("keyword"), server.pid);
      const vectorsOf = collectionNames(collection).vectors;
      await measure(
        "raw Typesense, default search", "keyword + 100 nearest vectors (one multi_search)",
        (q) => client.multiSearch.perform({
          searches: [
            { collection: plain, ...keyword, q: q.text },
            { collection: vectorsOf, q: "*", vector_query: `embedding:([${Array.from(q.vector!).join(",")}], k:${DEPTH})`, per_page: DEPTH, include_fields: "id" },
          ],
        } as never),
        indexQueries("hybrid"), server.pid,
      );
    }
  } finally {
    await platform.dropCollection();
    await client.collections(plain).delete().catch(() => undefined);
    await server.stop();
  }

  console.log(`\nBEIR SciFact, all of it (${corpus.length} abstracts, ${chunks.length} chunks with ${DIMENSIONS}-d vectors, ${queries.length} test queries), depth ${DEPTH}, one run:`);
  console.log("\n| engine | mode | clients | p50 / p99 ms | queries/s | CPU ms/query: this process | CPU ms/query: typesense-server |\n|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.engine} | ${r.mode} | ${r.clients} | ${r.l.p50.toFixed(1)} / ${r.l.p99.toFixed(1)} | ${r.l.qps.toFixed(1)} | ${ms(r.l.nodeCpu)} | ${ms(r.l.serverCpu)} |`);
  const find = (engine: string, mode: string, clients: number) => rows.find((r) => r.engine.startsWith(engine) && r.mode === mode && r.clients === clients)?.l;
  const raw = find("raw", "keyword", 1);
  const keyword = find("platform", "keyword", 1);
  const hybrid = find("platform", "hybrid", 1);
  const busy = find("platform", "keyword", 8);
  if (raw && keyword && hybrid && busy) {
    const cpu = (l: Latency) => (l.nodeCpu ?? 0) + (l.serverCpu ?? 0);
    console.log("\n| check (platform on Typesense against raw Typesense's default search, same run) | value |\n|---|---|");
    console.log(`| keyword p50, 1 client / raw default p50 | ${keyword.p50.toFixed(1)} / ${raw.p50.toFixed(1)} ms = ${(keyword.p50 / raw.p50).toFixed(2)} |`);
    console.log(`| hybrid p50, 1 client / raw default p50 | ${hybrid.p50.toFixed(1)} / ${raw.p50.toFixed(1)} ms = ${(hybrid.p50 / raw.p50).toFixed(2)} |`);
    console.log(`| CPU per keyword query (this process + typesense-server) / raw default's | ${cpu(keyword).toFixed(1)} / ${cpu(raw).toFixed(1)} ms = ${(cpu(keyword) / cpu(raw)).toFixed(2)} |`);
    console.log(`| keyword queries/s at 8 clients | ${busy.qps.toFixed(1)} |`);
  }
}
