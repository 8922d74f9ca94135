import { randomBytes } from "node:crypto";
import { TypesenseEngine } from "../../lib/search/typesense/engine";
import { CONTRACT_DIMENSIONS, searchIndexContract } from "./search-index.contract";

// The Typesense server of the test run (global setup starts one, or uses TYPESENSE_URL's).
const url = process.env.TEST_TYPESENSE_URL!;

// A collection of its own per run, dropped afterwards.
searchIndexContract(`typesense at ${url}`, async () =>
  new TypesenseEngine({
    url,
    apiKey: process.env.TEST_TYPESENSE_API_KEY ?? "",
    collection: `contract_${randomBytes(4).toString("hex")}`,
    dimensions: CONTRACT_DIMENSIONS,
  }),
);
