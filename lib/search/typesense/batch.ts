/** One search of a multi_search request (its collection named in it). */
export type Search = Record<string, unknown> & { collection: string };

export interface Hit<D> {
  document: D;
  vector_distance?: number;
}

export interface SearchResult<D = unknown> {
  found: number;
  hits?: Hit<D>[];
  facet_counts?: { field_name: string; stats?: { sum?: number } }[];
  error?: string;
}

/** Searches gathered for one multi_search round trip; each add() gives a handle read after the batch ran. */
export class Batch {
  readonly searches: Search[] = [];
  results: SearchResult[] = [];
  add<D>(search: Search): () => SearchResult<D> {
    const i = this.searches.push(search) - 1;
    return () => this.results[i] as SearchResult<D>;
  }
}
