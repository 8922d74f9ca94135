/**
 * The rerank stage and the hybrid weight (issue 26, item 4; docs/adr/0056-rerank-and-hybrid-weight.md), over
 * HTTP on both engines, with a real fixture reranker on 127.0.0.1 that serves the Cohere/Jina/vLLM shape to one
 * cluster and the TEI shape to the other.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ServiceBroker } from "moleculer";
import type { Env } from "../../lib/env";
import { httpReranker, RerankError } from "../../lib/search/rerank";
import SearchService from "../../services/search/search.service";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { CORPUS } from "../contract/corpus";
import { scaled } from "../harness/wait";

/** How the fixture answers: by term overlap, reversing the order it was sent, failing, or too late. */
type FixtureMode = "overlap" | "reverse" | "down" | "slow";

const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? []);
/** The fixture's relevance: the share of the query's words the text holds (deterministic, computed again by the tests). */
function overlap(query: string, text: string): number {
  const q = words(query);
  const t = words(text);
  return [...q].filter((w) => t.has(w)).length / (q.size || 1);
}

/** A reranker on loopback: POST /rerank reads `documents` (answers {results: [{index, relevance_score}]}) or `texts` (answers TEI's array). */
async function startFixtureReranker() {
  const state = { mode: "overlap" as FixtureMode, requests: [] as { query: string; documents?: string[]; texts?: string[]; top_n?: number; model?: string; auth?: string }[] };
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}");
      state.requests.push({ ...body, auth: req.headers.authorization });
      if (req.url !== "/rerank" || req.method !== "POST") return void res.writeHead(404).end();
      if (state.mode === "down") return void res.writeHead(503, { "content-type": "text/plain" }).end("overloaded");
      const texts: string[] = body.documents ?? body.texts ?? [];
      const scored = texts.map((t, index) => ({ index, score: state.mode === "reverse" ? (index + 1) / texts.length : overlap(body.query, t) }));
      scored.sort((a, b) => b.score - a.score || a.index - b.index);
      const answer = body.texts
        ? scored.map((s) => ({ index: s.index, score: s.score }))
        : { id: "fixture", results: scored.slice(0, body.top_n ?? scored.length).map((s) => ({ index: s.index, relevance_score: s.score })) };
      const send = () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      if (state.mode === "slow") setTimeout(send, 3_000);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rerank`, state, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let fixture: Awaited<ReturnType<typeof startFixtureReranker>>;
beforeAll(async () => {
  fixture = await startFixtureReranker();
});
afterAll(async () => {
  await fixture?.close();
});

describe("the HTTP rerank provider against the fixture", () => {
  beforeEach(() => {
    fixture.state.mode = "overlap";
  });

  it.each(["cohere", "tei"] as const)("sends the %s body and reads its answer, best first", async (api) => {
    const reranker = httpReranker({ url: fixture.url, model: "fixture-model", apiKey: "k", api, timeoutMs: 2_000 });
    const hits = await reranker.rerank("reset password link", ["delivery times", "reset your password with the link", "password"], 3);
    expect(hits.map((h) => h.index)).toEqual([1, 2, 0]);
    expect(hits[0]!.score).toBeCloseTo(1);
    const sent = fixture.state.requests.at(-1)!;
    expect(sent.auth).toBe("Bearer k");
    if (api === "cohere") expect(sent).toMatchObject({ model: "fixture-model", top_n: 3, documents: expect.any(Array) });
    else expect(sent).toMatchObject({ texts: expect.any(Array) });
  });

  it("fails with a RerankError on an error status, a timeout or an unreachable endpoint", async () => {
    fixture.state.mode = "down";
    await expect(httpReranker({ url: fixture.url, model: "", apiKey: "", api: "cohere", timeoutMs: 2_000 }).rerank("q", ["a"], 1)).rejects.toThrow(/answered 503/);
    fixture.state.mode = "slow";
    await expect(httpReranker({ url: fixture.url, model: "", apiKey: "", api: "cohere", timeoutMs: 200 }).rerank("q", ["a"], 1)).rejects.toBeInstanceOf(RerankError);
    await expect(httpReranker({ url: "http://127.0.0.1:1/rerank", model: "", apiKey: "", api: "tei", timeoutMs: 2_000 }).rerank("q", ["a"], 1)).rejects.toThrow(/unreachable/);
  });
});

/** One cluster per engine; the embedded one speaks the Cohere dialect to the fixture, the Typesense one TEI's. */
const ENGINES = [
  { engine: "embedded", api: "cohere", env: {} as Env },
  {
    engine: "typesense",
    api: "tei",
    env: {
      SEARCH_ENGINE: "typesense",
      TYPESENSE_URL: process.env.TEST_TYPESENSE_URL!,
      TYPESENSE_API_KEY: process.env.TEST_TYPESENSE_API_KEY ?? "",
      TYPESENSE_COLLECTION: `rerank_spec_${randomBytes(4).toString("hex")}`,
    } as Env,
  },
] as const;

type DocResult = { url: string; title: string; content: string; score: number; normalized_score: number };
const urls = (rs: { url: string }[]) => rs.map((r) => r.url);

describe.each(ENGINES)("rerank and hybrid_weight on the $engine engine", ({ engine, api: dialect, env }) => {
  let cluster: Cluster;
  let api: Api;
  let broker: ServiceBroker;
  let owner: { token: string; accountId: number };
  const search = (body: object) => api("POST", "/api/v1/knowledge/documents/search", { token: owner.token, body });

  beforeAll(async () => {
    cluster = await startCluster({
      database: `rerank-${engine}`,
      env: { EMBEDDING_PROVIDER: undefined, SEARCH_ENGINE: undefined, SEARCH_SNAPSHOTS: "off", RERANK_URL: fixture.url, RERANK_API: dialect, RERANK_TIMEOUT_MS: "1000", RERANK_TOP_N: "4", ...env },
      extraServices: [SearchService],
      nodes: [["gateway"], ["users", "api-keys", "knowledge"]],
    });
    api = apiClient(cluster.baseUrl);
    broker = cluster.brokers[0]!;
    await broker.waitForServices(["search"], 20_000);
    const a = await signup(api, "rerank");
    owner = { token: a.token, accountId: a.user.account_id };
    const deadline = Date.now() + scaled(120_000);
    while ((await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token })).status !== 200) await new Promise((r) => setTimeout(r, 100));
    await broker.call("search.indexDocuments", { accountId: owner.accountId, sourceId: 1, documents: CORPUS.map((d) => ({ url: d.url, title: d.title, content: d.content })) });
    for (;;) {
      const stats = await api("GET", "/api/v1/knowledge/documents/stats", { token: owner.token });
      if (stats.body.index_status === "ready") break;
      if (Date.now() > deadline) throw new Error("chunks not embedded in time");
      await new Promise((r) => setTimeout(r, 200));
    }
  }, scaled(180_000));
  afterAll(async () => {
    await cluster?.stop();
    if ("TYPESENSE_URL" in env) {
      await fetch(`${env.TYPESENSE_URL}/collections/${env.TYPESENSE_COLLECTION}`, { method: "DELETE", headers: { "X-TYPESENSE-API-KEY": env.TYPESENSE_API_KEY ?? "" } }).catch(() => undefined);
    }
  });
  beforeEach(() => {
    fixture.state.mode = "overlap";
  });

  const query = "how many days until refund or delivery of my parcel";

  it("rerank: true returns the reranker's order of the best fused documents, with its scores and reranked: true", async () => {
    const fused = await search({ query, limit: 10 });
    expect(fused.status).toBe(200);
    expect(fused.body).not.toHaveProperty("reranked");
    const res = await search({ query, limit: 10, rerank: true });
    expect(res.status).toBe(200);
    expect(res.body.reranked).toBe(true);
    // The fixture was sent the default top n (RERANK_TOP_N=4) fused documents, as "title\n\ncontent", in the dialect configured.
    const sent = fixture.state.requests.at(-1)!;
    const texts = (dialect === "cohere" ? sent.documents : sent.texts)!;
    const head = (fused.body.results as DocResult[]).slice(0, 4);
    expect(texts).toEqual(head.map((r) => `${r.title}\n\n${CORPUS.find((d) => d.url === r.url)!.content}`));
    // The expected order is computed here from the fixture's rule; documents past the top n follow in fused order.
    const expected = head.map((r, i) => ({ r, i, s: overlap(query, texts[i]!) })).sort((a, b) => b.s - a.s || a.i - b.i);
    const results = res.body.results as DocResult[];
    expect(urls(results)).toEqual([...expected.map((e) => e.r.url), ...urls(fused.body.results).slice(4)]);
    expect(results.slice(0, 4).map((r) => r.score)).toEqual(expected.map((e) => expect.closeTo(e.s, 6)));
    expect(results.slice(4).every((r) => r.score === 0 && r.normalized_score === 0)).toBe(true);
    expect(results[0]!.normalized_score).toBe(100);
  });

  it("rerank_top_n sets how many are reranked; the order is the reranker's even where it reverses fusion", async () => {
    fixture.state.mode = "reverse";
    const fused = urls((await search({ query, limit: 10 })).body.results);
    const res = await search({ query, limit: 10, rerank: true, rerank_top_n: 3 });
    expect((fixture.state.requests.at(-1)!.documents ?? fixture.state.requests.at(-1)!.texts)!).toHaveLength(3);
    expect(urls(res.body.results)).toEqual([fused[2], fused[1], fused[0], ...fused.slice(3)]);
  });

  it("the source-level search reranks chunks too", async () => {
    fixture.state.mode = "reverse";
    const fused = await api("POST", "/api/v1/knowledge/search", { token: owner.token, body: { query, limit: 5 } });
    const res = await api("POST", "/api/v1/knowledge/search", { token: owner.token, body: { query, limit: 5, rerank: true, rerank_top_n: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.reranked).toBe(true);
    const order = (r: { body: { results: { metadata: { url: string } }[] } }) => r.body.results.map((x) => x.metadata.url);
    expect(order(res).slice(0, 3)).toEqual([order(fused)[1], order(fused)[0], order(fused)[2]]);
    expect(res.body.results[0].score).toBe(1);
  });

  it("a provider that fails or times out leaves the fused order, with reranked: false (fails open)", async () => {
    const fused = urls((await search({ query, limit: 10 })).body.results);
    for (const mode of ["down", "slow"] as const) {
      fixture.state.mode = mode;
      const t0 = Date.now();
      const res = await search({ query, limit: 10, rerank: true });
      expect(res.status).toBe(200);
      expect(res.body.reranked).toBe(false);
      expect(urls(res.body.results)).toEqual(fused);
      if (mode === "slow") expect(Date.now() - t0).toBeLessThan(scaled(2_800));
    }
  });

  it("hybrid_weight 0 ranks as keyword, 1 as semantic", async () => {
    for (const q of [query, "I can't remember my login credentials, how do I get back in?", "levain starter"]) {
      const keyword = urls((await search({ query: q, mode: "keyword", limit: 20 })).body.results);
      const semantic = urls((await search({ query: q, mode: "semantic", limit: 20 })).body.results);
      const zero = urls((await search({ query: q, hybrid_weight: 0, limit: 20 })).body.results);
      const one = urls((await search({ query: q, hybrid_weight: 1, limit: 20 })).body.results);
      // Weight 0: the keyword order, then what only the vector list found (scored 0).
      expect(zero.slice(0, keyword.length)).toEqual(keyword);
      // Weight 1: the semantic order (its last hit scales to 0, as do keyword-only hits, so it is left out).
      expect(one.slice(0, Math.max(0, semantic.length - 1))).toEqual(semantic.slice(0, -1));
    }
  });

  it("validates the knobs (422 with the field)", async () => {
    const cases: [object, string][] = [
      [{ query, hybrid_weight: 1.5 }, "hybrid_weight"],
      [{ query, hybrid_weight: -0.1 }, "hybrid_weight"],
      [{ query, hybrid_weight: "heavy" }, "hybrid_weight"],
      [{ query, mode: "keyword", hybrid_weight: 0.5 }, "hybrid_weight"],
      [{ query, rerank: "yes" }, "rerank"],
      [{ query, rerank: true, rerank_top_n: 0 }, "rerank_top_n"],
      [{ query, rerank: true, rerank_top_n: 101 }, "rerank_top_n"],
      [{ query, rerank_top_n: 5 }, "rerank_top_n"],
    ];
    for (const [body, field] of cases) {
      for (const path of ["/api/v1/knowledge/documents/search", "/api/v1/knowledge/search"]) {
        const res = await api("POST", path, { token: owner.token, body });
        expect([path, body, res.status]).toEqual([path, body, 422]);
        expect(res.body.detail[0].loc).toEqual(["body", field]);
      }
    }
  });
});

describe("without a reranker", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    cluster = await startCluster({ database: "rerank-none", env: { EMBEDDING_PROVIDER: "none", SEARCH_SNAPSHOTS: "off", RERANK_URL: "" }, extraServices: [SearchService], nodes: [["gateway"], ["users", "api-keys", "knowledge"]] });
    api = apiClient(cluster.baseUrl);
    await cluster.brokers[0]!.waitForServices(["search"], 20_000);
    token = (await signup(api, "rerank-none")).token;
    while ((await api("GET", "/api/v1/knowledge/documents/stats", { token })).status !== 200) await new Promise((r) => setTimeout(r, 100));
  }, scaled(60_000));
  afterAll(async () => {
    await cluster?.stop();
  });

  it("rerank: true is 422 on both routes; rerank: false and no rerank answer as before", async () => {
    for (const path of ["/api/v1/knowledge/documents/search", "/api/v1/knowledge/search"]) {
      const res = await api("POST", path, { token, body: { query: "anything", rerank: true } });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(["body", "rerank"]);
      expect(res.body.detail[0].msg).toMatch(/no reranker|has none/);
      expect((await api("POST", path, { token, body: { query: "anything", rerank: false } })).status).toBe(200);
    }
  });
});
