import { randomBytes } from "node:crypto";
import { TypesenseEngine } from "../../lib/search/typesense/engine";

/**
 * The search engines an integration spec runs on: the embedded one, and the test run's typesense-server with a
 * collection of the spec's own (`prefix_<random>`, so specs and runs never share one).
 */
export function searchEngines(prefix: string) {
  return [
    { engine: "embedded", env: {} },
    {
      engine: "typesense",
      env: {
        SEARCH_ENGINE: "typesense",
        TYPESENSE_URL: process.env.TEST_TYPESENSE_URL!,
        TYPESENSE_API_KEY: process.env.TEST_TYPESENSE_API_KEY ?? "",
        TYPESENSE_COLLECTION: `${prefix}_${randomBytes(4).toString("hex")}`,
      },
    },
  ] as const;
}

/** After a spec: the Typesense collections its engine entry made (the alias, the chunks and the vectors); nothing for the embedded engine. */
export async function dropSearchCollections(env: { TYPESENSE_URL?: string; TYPESENSE_API_KEY?: string; TYPESENSE_COLLECTION?: string }) {
  if (!env.TYPESENSE_URL || !env.TYPESENSE_COLLECTION) return;
  // The alias names the vectors collection that serves, whatever its dimensions.
  await new TypesenseEngine({ url: env.TYPESENSE_URL, apiKey: env.TYPESENSE_API_KEY ?? "", collection: env.TYPESENSE_COLLECTION, dimensions: 384 }).dropCollection();
}
