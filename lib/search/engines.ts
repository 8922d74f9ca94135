import type { SearchConfig } from "./config";
import { EmbeddedEngine } from "./embedded/engine";
import type { SearchIndex } from "./port";
import { TypesenseEngine } from "./typesense/engine";

/**
 * The embedded engine's face beyond the port: the search service refills it from MongoDB (load) and keeps its
 * per-account snapshots (write/load a snapshot, drop a stale partition). Typesense has none of this.
 */
export type LocalIndex = Pick<EmbeddedEngine, "load" | "dropPartition" | "writeSnapshot" | "loadSnapshot">;

/** The configured engine behind the port, and its local face when it is the embedded one. */
export interface SearchEngine {
  index: SearchIndex;
  local?: LocalIndex;
}

/**
 * The one place an engine is chosen and built (SEARCH_ENGINE): lib/search/embedded/ or lib/search/typesense/.
 * Services use the port (./port) and, for the embedded engine's snapshots, LocalIndex; never an engine class.
 */
export function createSearchIndex(
  config: Pick<SearchConfig, "engine" | "typesense">,
  options: { dimensions: number; model?: string; switchingModel: boolean },
): SearchEngine {
  const { dimensions, model, switchingModel } = options;
  if (config.engine === "embedded") {
    const embedded = new EmbeddedEngine({ dimensions });
    return { index: embedded, local: embedded };
  }
  return { index: new TypesenseEngine({ ...config.typesense, dimensions, model, switchingModel }) };
}
