import { randomBytes } from "node:crypto";
import path from "node:path";
import { listEnv, positiveIntEnv } from "../../lib/env";

// Settings of the knowledge-loading bench (environment, see bench/knowledge.ts) and the helpers its parts share.

export const ROOT = path.resolve(__dirname, "..", "..", "..");
export const SERVER_SCRIPT = path.join(ROOT, "dist", "server.js");
export const RESULTS_FILE = path.join(ROOT, "bench", "results", "knowledge.json");

/** Pages of the site loaded in each throughput scenario and in the resume scenario. */
export const PAGES = positiveIntEnv("BENCH_PAGES", 2000);
/**
 * One source is one load job, which one loader runs at a time; the pages are split over this many sources so
 * that two replicas have work to share. The same split is loaded with one and with two replicas.
 */
export const SOURCES = positiveIntEnv("BENCH_SOURCES", 4);
export const LOADER_COUNTS = listEnv("BENCH_LOADERS", ["1", "2"]).map(Number);
export const SCENARIOS = new Set(listEnv("BENCH_ONLY", ["throughput", "resume", "embedding"]));
/** Lease of the resume scenario's loaders: a killed loader's job is taken over once it expires. */
export const LEASE_SECONDS = positiveIntEnv("BENCH_LEASE_SECONDS", 10);
/** The loader is killed once this share of the pages is done. */
export const KILL_AT = 0.3;
/** Chunks the embedding scenario produces (default chunk size: 1000 characters). */
export const EMBED_CHUNKS = positiveIntEnv("BENCH_EMBED_CHUNKS", 200);
/** Used when no throughput scenario ran to measure it. */
export const DEFAULT_CHUNKS_PER_PAGE = 10;

export const POLL_MS = 250;
/** Faster polling while waiting for the kill point, so the kill lands close to it. */
export const KILL_POLL_MS = 100;
export const STARTUP_TIMEOUT_MS = 90_000;
export const RETRY_MS = 200;
/** One scenario's loading may take this long before it is reported as timed out (at least 4 pages/s). */
export const LOAD_TIMEOUT_MS = positiveIntEnv("BENCH_LOAD_TIMEOUT", Math.max(300, Math.ceil(PAGES / 4))) * 1000;
const SCENARIO_COUNT = (SCENARIOS.has("throughput") ? LOADER_COUNTS.length : 0) + (SCENARIOS.has("resume") ? 1 : 0) + (SCENARIOS.has("embedding") ? 1 : 0);
/** Hard bound on the whole run once NATS and the database are up. */
export const RUN_BUDGET_MS = SCENARIO_COUNT * (2 * STARTUP_TIMEOUT_MS + LOAD_TIMEOUT_MS) + 120_000;

/** The target: pages per second per loader replica, and how close two replicas must come to twice one. */
export const TARGET = { pagesPerSecondPerLoader: 100, minScaling: 1.8 } as const;
/** Loader settings the run inherits from the environment (the knobs worth trying), reported with the results. */
export const LOADER_KNOBS = ["LOAD_BATCH_SIZE", "LOAD_PER_HOST_CONCURRENCY", "LOAD_POLL_MS", "LOAD_WINDOW_SECONDS", "SEARCH_CHUNK_SIZE", "EMBEDDING_BATCH_SIZE"];

export const RUN_ID = randomBytes(3).toString("hex");
export const terminal = (status: string) => ["loaded", "partial", "failed"].includes(status);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const round = (n: number, digits = 1) => Number(n.toFixed(digits));
