import { randomBytes } from "node:crypto";
import { TypesenseEngine } from "../../lib/search/typesense-engine";
import { CONTRACT_DIMENSIONS, searchIndexContract } from "./search-index.contract";

const url = process.env.TYPESENSE_URL;

if (url) {
  // A collection of its own per run, dropped afterwards.
  searchIndexContract(`typesense at ${url}`, async () =>
    new TypesenseEngine({
      url,
      apiKey: process.env.TYPESENSE_API_KEY ?? "",
      collection: `contract_${randomBytes(4).toString("hex")}`,
      dimensions: CONTRACT_DIMENSIONS,
    }),
  );
} else {
  describe("SearchIndex contract: typesense", () => {
    it.skip("runs when TYPESENSE_URL is set", () => {});
  });
}
