/**
 * docs/deploy.md's Settings table lists every environment setting the app reads, so operators learn of a new
 * setting (and whether it is a secret) from the deployment guide, not from the source.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..");
const APP_SOURCES = ["lib", "services", "server.ts", "moleculer.config.ts"];

function sourceFiles(entry: string): string[] {
  const full = path.join(ROOT, entry);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full).flatMap((name) => (name.endsWith(".ts") || !name.includes(".") ? sourceFiles(path.join(entry, name)) : []));
}

/**
 * Settings the app reads: `env.NAME` / `process.env.NAME` / `env["NAME"]`, and a literal name handed to the
 * lib/env.ts readers or a local wrapper of them (`intEnv("PORT", ...)`, `atLeastOne("LOAD_POLL_MS", ...)`).
 */
function settingsRead(source: string): string[] {
  const pattern = /\b(?:env|process\.env)(?:\.([A-Z][A-Z0-9_]+)|\["([A-Z][A-Z0-9_]+)"\])|\b\w*(?:Env|atLeastOne)\((?:\w+, )?"([A-Z][A-Z0-9_]+)"/g;
  return [...source.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The names in the first column of the table under "## Settings". */
function documentedSettings(markdown: string): Set<string> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith("Settings\n")) ?? "";
  return new Set([...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!));
}

describe("docs/deploy.md settings", () => {
  const read = new Set(APP_SOURCES.flatMap(sourceFiles).flatMap((file) => settingsRead(readFileSync(file, "utf8"))));
  const documented = documentedSettings(readFileSync(path.join(ROOT, "docs", "deploy.md"), "utf8"));

  it("finds the settings the app reads", () => {
    expect(settingsRead('const a = env.MONGO_URL; numberEnv(env, "PORT", 1); atLeastOne("LOAD_POLL_MS", 2); process.env["X_Y"]')).toEqual([
      "MONGO_URL",
      "PORT",
      "LOAD_POLL_MS",
      "X_Y",
    ]);
    for (const name of ["MONGO_URL", "TRUSTED_PROXIES", "SECRETS_KEY", "METRICS_PORT", "HEALTH_PORT", "SEARCH_SNAPSHOT_DIR"]) expect(read).toContain(name);
  });

  it("lists every setting the app reads", () => {
    expect([...read].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });

  it("lists no setting the app does not read", () => {
    expect([...documented].filter((name) => !read.has(name)).sort()).toEqual([]);
  });
});
