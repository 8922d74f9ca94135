import { insertNew } from "../../lib/db";
import type { ChunkingSettings } from "../../lib/search/chunking";
import { vectorToBuffer } from "../../lib/search/vectors";
import type { DocumentRecord } from "./model";
import { embedText, indexKey, planChunks } from "./rules";
import { cachedVectors, indexDocuments, type IndexCounts, type StoreDeps } from "./store";

/*
 * Re-chunking a source's stored documents under new chunking settings (docs/adr/0059-chunking-per-source.md), in
 * two phases the loader's `rechunk` job drives. Searches answer from the old chunks until the second phase swaps
 * every changed document of the source in one index change.
 */

/** A document that is not being deleted (a queued deletion's document is left as it is). */
const live = (accountId: number, sourceId: number) => ({ account_id: accountId, source_id: sourceId, deletion_job_id: null });

/**
 * Phase 1, one page of the source's documents (id order, after `after`): the vectors of the chunks the settings
 * would make, computed into the embedding cache; nothing in the index or the chunks changes. Returns where the
 * next page starts (null: done). A restart redoes a page at most: what is cached already is not embedded again.
 */
export async function warmChunking(
  deps: StoreDeps,
  p: { accountId: number; sourceId: number; chunking: ChunkingSettings; after: string | null; limit: number; batchSize: number },
): Promise<{ next: string | null; documents: number; embedded: number }> {
  const { models, provider } = deps;
  const filter = { ...live(p.accountId, p.sourceId), ...(p.after ? { _id: { $gt: p.after } } : {}) };
  const docs = await models.documents.find(filter, { title: 1, url: 1, content: 1, content_hash: 1, index_key: 1, sections: 1 }).sort({ _id: 1 }).limit(p.limit).lean<DocumentRecord[]>();
  const next = docs.length < p.limit ? null : docs[docs.length - 1]!._id;
  if (!provider) return { next, documents: docs.length, embedded: 0 };
  const texts = new Map<string, string>();
  for (const d of docs) {
    // Already under these settings (indexed since the change): its chunks and vectors are there.
    if (d.index_key === indexKey({ title: d.title, url: d.url, contentHash: d.content_hash, chunking: p.chunking, sections: d.sections })) continue;
    for (const c of planChunks({ id: d._id, title: d.title, content: d.content, sections: d.sections }, p.chunking, provider.model)) texts.set(c.embedKey, embedText(d.title, c.content));
  }
  const cached = await cachedVectors(models, [...texts.keys()]);
  const missing = [...texts].filter((_, i) => !cached[i]);
  for (let i = 0; i < missing.length; i += p.batchSize) {
    const batch = missing.slice(i, i + p.batchSize);
    const vectors = await provider.embed(batch.map(([, text]) => text), "batch");
    // Another replica may have cached the same text meanwhile: the first copy stays.
    await insertNew(models.embeddings.collection, batch.map(([key], j) => ({ _id: key, vector: vectorToBuffer(vectors[j]!), created_at: new Date() })));
  }
  return { next, documents: docs.length, embedded: missing.length };
}

/**
 * Phase 2: every document of the source not yet under the settings is indexed again from its stored copy, all in
 * one batch, so the index swaps their chunks in one change (vectors from the cache phase 1 filled; a document
 * changed since is queued for embedding as any new chunk is).
 */
export async function switchChunking(deps: StoreDeps, p: { accountId: number; sourceId: number; chunking: ChunkingSettings }): Promise<IndexCounts> {
  const docs = await deps.models.documents.find(live(p.accountId, p.sourceId), { url: 1, title: 1, content: 1, metadata: 1, sections: 1 }).lean<DocumentRecord[]>();
  const documents = docs.map((d) => ({ url: d.url, title: d.title, content: d.content, metadata: d.metadata, sections: d.sections }));
  return indexDocuments(deps, { accountId: p.accountId, sourceId: p.sourceId, documents, chunking: p.chunking });
}
