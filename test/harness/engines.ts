import { randomBytes } from "node:crypto";

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
