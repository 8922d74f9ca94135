import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";

// Settings every test process shares; set before any service module reads its configuration.
process.env.MASTER_API_KEY ??= "test-master-key-0123456789abcdef";
// One random secret per test process, inherited by the platform processes tests spawn (clusters need one).
process.env.JWT_SECRET ??= randomBytes(32).toString("base64url");
process.env.LOG_LEVEL ??= "warn";
// Fixture sites are served on 127.0.0.1; the SSRF guard allows loopback only when told to.
process.env.ALLOW_LOOPBACK_TARGETS ??= "true";
// Load windows of a few seconds so tests see continuations. The lease stays longer than any stall a busy 2-core
// machine causes (a 3 s lease once expired mid-refresh and a second loader re-ran it); the kill test sets its own.
process.env.LOAD_WINDOW_SECONDS ??= "3";
process.env.LOAD_LEASE_SECONDS ??= "10";
process.env.LOAD_POLL_MS ??= "100";
process.env.LOAD_MAX_WINDOWS ??= "200";
// Search snapshots go to a per-process temporary directory, never into the work tree.
process.env.SEARCH_SNAPSHOT_DIR ??= path.join(os.tmpdir(), `search-snapshots-${process.pid}`);
// Every default test cluster runs the MCP server and test files run in parallel: each takes an ephemeral port.
process.env.MCP_PORT ??= "0";
process.env.MCP_HOST ??= "127.0.0.1";
