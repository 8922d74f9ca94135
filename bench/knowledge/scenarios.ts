import type { BenchSite } from "./site";
import { EMBED_CHUNKS, KILL_AT, KILL_POLL_MS, LEASE_SECONDS, LOAD_TIMEOUT_MS, PAGES, POLL_MS, round, sleep, SOURCES, terminal } from "./settings";
import { call, checkDocuments, cpuEnd, cpuStart, type CpuUse, createSource, describeCpu, type Platform, pollUntilLoaded, type SourceView, startPlatform, stopPlatform, type Timeline } from "./platform";

// The knowledge bench's scenarios: throughput with N loaders, resume after a killed loader, embedding rate.

/** Splits `total` pages into `parts` sources whose sizes differ by at most one. */
export function split(total: number, parts: number): number[] {
  const n = Math.min(parts, total);
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));
}

export interface ThroughputResult {
  loaders: number;
  sources: number[];
  timeline: Timeline;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  steadyPagesPerSecond: number | null;
  perSource: { id: number; pages: number; status: string; seconds: number | null; pagesPerSecond: number | null }[];
  /** Chunks and documents in the index (documents indexed even where the source's count was not yet updated). */
  chunks: number;
  indexedDocuments: number;
  /** Sum of the sources' document_count. */
  documents: number;
  cpu: CpuUse;
  ok: boolean;
  problems: string[];
}

export async function throughput(infra: { nats: string; mongo: string }, site: BenchSite, loaders: number): Promise<ThroughputResult> {
  const name = `throughput-${loaders}`;
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders, embedding: "none" });
    const sizes = split(PAGES, SOURCES);
    const cpu0 = cpuStart(platform);
    const startedAt = Date.now();
    const ids = await Promise.all(sizes.map((pages, i) => createSource(platform!, `bench ${name} source ${i + 1}`, site.sitemap(`t${loaders}s${i + 1}`, pages))));
    console.error(`${name}: ${ids.length} sources of ${sizes.join("/")} pages created; polling every ${POLL_MS} ms`);
    const timeline = await pollUntilLoaded(platform, ids, startedAt);
    const cpu = cpuEnd(platform, cpu0);
    const pages = timeline.sources.reduce((sum, s) => sum + s.loading_urls_done, 0);
    const documents = timeline.sources.reduce((sum, s) => sum + s.document_count, 0);
    const seconds = (timeline.endedAt - startedAt) / 1000;
    const steadySeconds = timeline.firstProgressAt === null ? 0 : (timeline.endedAt - timeline.firstProgressAt) / 1000;
    const stats = await call<{ total_chunks: number; total_documents: number }>(platform, "GET", "/knowledge/documents/stats");
    const indexed = { chunks: stats.total_chunks, documents: stats.total_documents };
    const problems: string[] = [];
    if (timeline.timedOut) problems.push(`timed out after ${LOAD_TIMEOUT_MS / 1000} s`);
    timeline.sources.forEach((s, i) => {
      if (s.loading_status !== "loaded" || s.document_count !== sizes[i]) {
        problems.push(`source ${s.id}: ${s.loading_status}, ${s.document_count}/${sizes[i]} documents${s.loading_error ? ` (${s.loading_error})` : ""}`);
      }
    });
    const result: ThroughputResult = {
      loaders,
      sources: sizes,
      timeline,
      pages,
      seconds: round(seconds, 2),
      pagesPerSecond: round(pages / seconds),
      steadyPagesPerSecond: steadySeconds > 0 ? round((pages - timeline.doneAtFirstProgress) / steadySeconds) : null,
      perSource: timeline.sources.map((s) => {
        const secs = s.endedAt === null ? null : (s.endedAt - startedAt) / 1000;
        return { id: s.id, pages: s.loading_urls_done, status: s.loading_status, seconds: secs === null ? null : round(secs, 2), pagesPerSecond: secs ? round(s.loading_urls_done / secs) : null };
      }),
      chunks: indexed.chunks,
      indexedDocuments: indexed.documents,
      documents,
      cpu,
      ok: problems.length === 0,
      problems,
    };
    console.error(`${name}: ${pages} pages in ${seconds.toFixed(1)} s = ${result.pagesPerSecond} pages/s (${result.steadyPagesPerSecond ?? "?"} after the first batch); ${stats.total_chunks} chunks`);
    console.error(`${name}: ${describeCpu(cpu, seconds)}`);
    return result;
  } finally {
    await stopPlatform(platform);
  }
}

interface ResumeResult {
  pages: number;
  leaseSeconds: number;
  killedAtDone: number;
  persistedAtKill: number;
  killedAfterSeconds: number;
  /** Kill → the replacement loader's health probe answers (process start, NATS, waiting for search). */
  replacementReadySeconds: number;
  /** Kill → loading_urls_done moves past what was saved when the loader died. */
  resumeSeconds: number;
  totalSeconds: number;
  pagesPerSecond: number;
  final: SourceView;
  documents: Awaited<ReturnType<typeof checkDocuments>>;
  pagesRefetched: number;
  ok: boolean;
}

export async function resume(infra: { nats: string; mongo: string }, site: BenchSite): Promise<ResumeResult> {
  const name = "resume";
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders: 1, embedding: "none", extraEnv: { LOAD_LEASE_SECONDS: String(LEASE_SECONDS) } });
    const refetchedBefore = site.pagesRefetched;
    const startedAt = Date.now();
    const id = await createSource(platform, "bench resume", site.sitemap("resume", PAGES));
    const killAt = Math.ceil(PAGES * KILL_AT);
    const deadline = startedAt + LOAD_TIMEOUT_MS;
    let view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
    while (view.loading_urls_done < killAt) {
      if (Date.now() > deadline || terminal(view.loading_status)) {
        throw new Error(`never reached ${killAt} pages done: ${view.loading_status} at ${view.loading_urls_done} pages${view.loading_error ? ` (${view.loading_error})` : ""}`);
      }
      await sleep(KILL_POLL_MS);
      view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
    }
    const doomed = platform.loaders[0]!;
    doomed.kill("SIGKILL");
    const killedAt = Date.now();
    const killedAtDone = view.loading_urls_done;
    console.error(`resume: SIGKILL to loader 1 at ${killedAtDone}/${PAGES} pages done, ${((killedAt - startedAt) / 1000).toFixed(1)} s in; starting a replacement`);
    await doomed.exited.catch(() => undefined);
    // What the dead loader saved last: progress can only move again once another loader holds the job.
    const persistedAtKill = (await call<SourceView>(platform, "GET", `/knowledge/${id}`)).loading_urls_done;
    let replacementReadyAt = 0;
    const replacement = platform.addLoader().then(() => void (replacementReadyAt = Date.now()));
    let resumedAt = 0;
    for (;;) {
      const now = Date.now();
      view = await call<SourceView>(platform, "GET", `/knowledge/${id}`);
      if (view.loading_urls_done > persistedAtKill || terminal(view.loading_status)) {
        resumedAt = now;
        break;
      }
      if (now > deadline) throw new Error(`resume: no progress after the kill in ${(now - killedAt) / 1000} s`);
      await Promise.race([sleep(KILL_POLL_MS), platform.main.exited]);
    }
    await replacement;
    console.error(`resume: progress again ${((resumedAt - killedAt) / 1000).toFixed(1)} s after the kill (lease ${LEASE_SECONDS} s)`);
    const timeline = await pollUntilLoaded(platform, [id], startedAt);
    const final = timeline.sources[0]!;
    const documents = await checkDocuments(platform, id, PAGES);
    const totalSeconds = (timeline.endedAt - startedAt) / 1000;
    const ok = !timeline.timedOut && final.loading_status === "loaded" && final.document_count === PAGES && final.loading_urls_done === PAGES && documents.ok;
    return {
      pages: PAGES,
      leaseSeconds: LEASE_SECONDS,
      killedAtDone,
      persistedAtKill,
      killedAfterSeconds: round((killedAt - startedAt) / 1000, 2),
      replacementReadySeconds: round((replacementReadyAt - killedAt) / 1000, 2),
      resumeSeconds: round((resumedAt - killedAt) / 1000, 2),
      totalSeconds: round(totalSeconds, 2),
      pagesPerSecond: round(final.loading_urls_done / totalSeconds),
      final,
      documents,
      pagesRefetched: site.pagesRefetched - refetchedBefore,
      ok,
    };
  } finally {
    await stopPlatform(platform);
  }
}

interface EmbeddingResult {
  pages: number;
  chunks: number;
  embedded: number;
  /** The first semantic query, which waits for the model to load. */
  modelWarmUpSeconds: number;
  /** Source created → loaded (indexing continues while embedding runs in the search process). */
  loadSeconds: number;
  /** First chunks seen in the index → every chunk has its vector. */
  embeddingSeconds: number;
  chunksPerSecond: number;
  cpu: CpuUse;
  ok: boolean;
}

export async function embedding(infra: { nats: string; mongo: string }, site: BenchSite, chunksPerPage: number): Promise<EmbeddingResult> {
  const name = "embedding";
  let platform: Platform | undefined;
  try {
    platform = await startPlatform(name, infra, { loaders: 1, embedding: "local" });
    const warmStart = Date.now();
    await call(platform, "POST", "/knowledge/documents/search", { query: "warm up the embedding model", mode: "semantic" });
    const modelWarmUpSeconds = (Date.now() - warmStart) / 1000;
    const pages = Math.max(1, Math.ceil(EMBED_CHUNKS / chunksPerPage));
    const cpu0 = cpuStart(platform);
    const startedAt = Date.now();
    const id = await createSource(platform, "bench embedding", site.sitemap("embed", pages));
    console.error(`embedding: model ready in ${modelWarmUpSeconds.toFixed(1)} s; loading ${pages} pages (~${EMBED_CHUNKS} chunks) with EMBEDDING_PROVIDER=local`);
    const deadline = startedAt + LOAD_TIMEOUT_MS;
    let firstChunksAt = 0;
    let loadedAt = 0;
    let stats = { total_chunks: 0, embedded_chunks: 0 };
    for (;;) {
      const [view, now] = [await call<SourceView>(platform, "GET", `/knowledge/${id}`), Date.now()];
      stats = await call(platform, "GET", "/knowledge/documents/stats");
      if (!firstChunksAt && stats.total_chunks > 0) firstChunksAt = now;
      if (!loadedAt && terminal(view.loading_status)) loadedAt = now;
      if (loadedAt && stats.total_chunks > 0 && stats.embedded_chunks >= stats.total_chunks) break;
      if (now > deadline) throw new Error(`embedding: ${stats.embedded_chunks}/${stats.total_chunks} chunks embedded after ${LOAD_TIMEOUT_MS / 1000} s`);
      await Promise.race([sleep(POLL_MS), platform.main.exited]);
    }
    const doneAt = Date.now();
    const cpu = cpuEnd(platform, cpu0);
    const embeddingSeconds = (doneAt - firstChunksAt) / 1000;
    const result: EmbeddingResult = {
      pages,
      chunks: stats.total_chunks,
      embedded: stats.embedded_chunks,
      modelWarmUpSeconds: round(modelWarmUpSeconds, 2),
      loadSeconds: round((loadedAt - startedAt) / 1000, 2),
      embeddingSeconds: round(embeddingSeconds, 2),
      chunksPerSecond: round(stats.total_chunks / embeddingSeconds, 1),
      cpu,
      ok: stats.embedded_chunks === stats.total_chunks,
    };
    console.error(`embedding: ${result.chunks} chunks embedded in ${embeddingSeconds.toFixed(1)} s = ${result.chunksPerSecond} chunks/s`);
    console.error(`embedding: ${describeCpu(cpu, (doneAt - startedAt) / 1000)}`);
    return result;
  } finally {
    await stopPlatform(platform);
  }
}
