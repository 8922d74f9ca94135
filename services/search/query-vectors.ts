import type { Logger } from "moleculer";
import type { EmbeddingProvider } from "../../lib/search/embeddings";
import type { ModelSwitch } from "./model-switch";

/** Query embeddings kept in memory (repeated queries skip the model). */
const QUERY_CACHE_SIZE = 500;

/** Query embeddings, with a small cache; null when there is no vector to search with (the search then says keyword). */
export class QueryVectors {
  private readonly cache = new Map<string, Float32Array>();

  constructor(
    private readonly provider: EmbeddingProvider | undefined,
    private readonly modelSwitch: ModelSwitch | undefined,
    private readonly logger: Logger,
  ) {}

  /** The query's embedding, or null when there is no provider, a model switch is under way, or the model fails. */
  async of(text: string): Promise<Float32Array | null> {
    // During a model switch the index holds vectors of two models: keyword until the switch is done.
    if (!this.provider || this.modelSwitch?.switching) return null;
    const hit = this.cache.get(text);
    if (hit) return hit;
    try {
      const [vector] = await this.provider.embed([text], "query");
      if (this.cache.size >= QUERY_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(text, vector!);
      return vector!;
    } catch (err) {
      this.logger.warn("Query embedding failed; answering with keyword search", (err as Error).message);
      return null;
    }
  }
}
