import { EmbeddedEngine } from "../../lib/search/embedded-engine";
import { searchIndexContract } from "./search-index.contract";

// Runs on every test run: the engine of `npm start` and of the integration tests.
searchIndexContract("embedded engine (exact vectors)", async () => new EmbeddedEngine({ dimensions: 512 }));
// The same contract with the HNSW graph forced on, so the approximate path meets it too.
searchIndexContract("embedded engine (HNSW)", async () => new EmbeddedEngine({ dimensions: 512, flatCutoff: 0 }));
