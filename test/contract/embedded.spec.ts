import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EmbeddedEngine, type EmbeddedEngineOptions } from "../../lib/search/embedded/engine";
import type { SearchIndex } from "../../lib/search/port";
import { CONTRACT_DIMENSIONS, searchIndexContract } from "./search-index.contract";

/**
 * The embedded engine as a restart leaves it: whatever was indexed before the first search is written to
 * snapshots and loaded into a new engine, which serves the searches and takes the later writes.
 */
function restoredFromSnapshots(options: EmbeddedEngineOptions): SearchIndex {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-snapshots-"));
  const stamp = { epoch: "contract", generation: 1 };
  let current = new EmbeddedEngine(options);
  let restored: Promise<void> | undefined;
  const restore = async () => {
    const next = new EmbeddedEngine(options);
    for (const accountId of current.accounts()) {
      await current.writeSnapshot(accountId, path.join(dir, String(accountId)), stamp);
      const loaded = await next.loadSnapshot(accountId, path.join(dir, String(accountId)), stamp);
      if (!loaded.ok) throw new Error(loaded.reason);
    }
    await current.stop();
    current = next;
  };
  const ready = () => (restored ??= restore());
  return {
    engine: "embedded",
    start: () => current.start(),
    async stop() {
      await current.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    upsertChunks: async (chunks) => current.upsertChunks(chunks),
    replaceChunks: async (accountId, chunks, staleIds) => current.replaceChunks(accountId, chunks, staleIds),
    setVectors: async (accountId, vectors) => current.setVectors(accountId, vectors),
    deleteChunks: async (accountId, ids) => current.deleteChunks(accountId, ids),
    setDocumentMetadata: async (accountId, documentId, chunkIds, metadata) => current.setDocumentMetadata(accountId, documentId, chunkIds, metadata),
    deleteSource: async (accountId, sourceId) => current.deleteSource(accountId, sourceId),
    search: async (q) => (await ready(), current.search(q)),
    countDocuments: async (accountId, sourceId) => (await ready(), current.countDocuments(accountId, sourceId)),
    stats: async (accountId, sourceId) => (await ready(), current.stats(accountId, sourceId)),
  };
}

// Runs on every test run: the engine of `npm start` and of the integration tests.
searchIndexContract("embedded engine (exact vectors)", async () => new EmbeddedEngine({ dimensions: CONTRACT_DIMENSIONS }));
// The same contract with the HNSW graph forced on, so the approximate path meets it too.
searchIndexContract("embedded engine (HNSW)", async () => new EmbeddedEngine({ dimensions: CONTRACT_DIMENSIONS, flatCutoff: 0 }));
// And after a restart from snapshots (graph read back with hnswlib, text read from the snapshot file).
searchIndexContract("embedded engine (HNSW, restored from snapshots)", async () => restoredFromSnapshots({ dimensions: CONTRACT_DIMENSIONS, flatCutoff: 0, textOnDiskFrom: 0 }));
