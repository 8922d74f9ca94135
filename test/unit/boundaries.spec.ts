/**
 * Service boundaries hold on every `npm test` (docs/adr/0052-service-boundaries.md): dependency-cruiser, with the
 * project's .dependency-cruiser.cjs, finds no service importing another's internals and no lib/ file importing
 * services/. A fixture with one import of each forbidden kind shows the rules do fire. And no service writes
 * through a model another service's public face exports (one writer per collection, docs/architecture.md).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..");
const CONFIG = path.join(ROOT, ".dependency-cruiser.cjs");
const DEPCRUISE = path.join(ROOT, "node_modules", "dependency-cruiser", "bin", "dependency-cruiser.mjs");

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}

/** The violations dependency-cruiser reports for `targets`, cruised from `cwd` with the project's rules. */
function violations(cwd: string, targets: string[]): Violation[] {
  let out: string;
  try {
    out = execFileSync(process.execPath, [DEPCRUISE, "--config", CONFIG, "--output-type", "json", ...targets], { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    // depcruise exits non-zero when it finds errors; the JSON report is on stdout all the same.
    out = (err as { stdout?: string }).stdout ?? "";
    if (!out) throw err;
  }
  return (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}

/** Writes files (relative path -> content) under a new temporary directory and returns it. */
function fixture(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "boundaries-"));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

/** Every .ts file under `dir`, relative to ROOT. */
function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return name.endsWith(".ts") ? [rel] : [];
  });
}

const WRITES = "create|insertMany|insertOne|updateOne|updateMany|replaceOne|deleteOne|deleteMany|findOneAndUpdate|findOneAndDelete|findOneAndReplace|findByIdAndUpdate|findByIdAndDelete|bulkWrite|save";

/**
 * Writes through another service's model in `source`: `otherModel(db).updateOne(...)`, a unit of work's
 * `put/insert/update(otherModel(db), ...)`, or `this.models.<key>.updateOne(...)` for a key MongoMixin gives such
 * a model. A heuristic over the text, for the forms the code uses; reads and handing the model to the owner's
 * exported functions pass.
 */
function foreignModelWrites(source: string): string[] {
  const imported = [...source.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*"\.\.\/[a-z-]+"/g)].flatMap((m) =>
    m[1]!.split(",").map((name) => name.trim()).filter((name) => /^[a-z]\w*Models?$/.test(name)),
  );
  return imported.flatMap((model) => {
    const keys = [...source.matchAll(new RegExp(`(\\w+):\\s*${model}\\(db\\)`, "g"))].map((m) => m[1]!);
    const patterns = [
      new RegExp(`\\b${model}\\([^()]*\\)\\s*\\.\\s*(?:${WRITES})\\(`, "g"),
      new RegExp(`\\.(?:put|insert|update)\\(\\s*${model}\\(`, "g"),
      ...keys.map((key) => new RegExp(`this\\.models\\.${key}\\s*\\.\\s*(?:${WRITES})\\(`, "g")),
    ];
    return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[0]));
  });
}

describe("service boundaries (dependency-cruiser)", () => {
  it("no service imports another's internals, and lib/ imports no service", () => {
    const found = violations(ROOT, ["services", "lib", "server.ts", "moleculer.config.ts"]);
    expect(found.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  });

  it("the rules fire on each forbidden import, type-only ones included, and let the public faces through", () => {
    const dir = fixture({
      "tsconfig.json": JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext", strict: true } }),
      "services/a/index.ts": 'export { helper } from "./internal";\n',
      "services/a/internal.ts": "export const helper = 1;\nexport type Shape = { n: number };\n",
      "services/a/a.service.ts": 'import { helper } from "./internal";\nexport default { name: "a", helper };\n',
      "services/b/uses-face.ts": 'import { helper } from "../a";\nexport const ok = helper;\n',
      "services/b/uses-internal.ts": 'import { helper } from "../a/internal";\nexport const bad = helper;\n',
      "services/b/uses-type.ts": 'import type { Shape } from "../a/internal";\nexport const typed: Shape = { n: 1 };\n',
      "services/index.ts": 'import A from "./a/a.service";\nimport { helper } from "./a/internal";\nexport default [A, helper];\n',
      "lib/shared.ts": 'import { helper } from "../services/a";\nexport const libBad = helper;\n',
      "server.ts": 'import services from "./services";\nimport { helper } from "./services/a/internal";\nexport default [services, helper];\n',
    });
    try {
      const found = violations(dir, ["services", "lib", "server.ts"]).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
      expect(found.sort()).toEqual(
        [
          "no-other-service-internals: services/b/uses-internal.ts -> services/a/internal.ts",
          "no-other-service-internals: services/b/uses-type.ts -> services/a/internal.ts",
          "registry-imports-service-schemas-only: services/index.ts -> services/a/internal.ts",
          "lib-imports-no-service: lib/shared.ts -> services/a/index.ts",
          "no-service-internals-from-outside: server.ts -> services/a/internal.ts",
        ].sort(),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("no service writes through a model another service's public face exports (one writer per collection)", () => {
    const found = sourceFiles("services").flatMap((file) => foreignModelWrites(readFileSync(path.join(ROOT, file), "utf8")).map((w) => `${file}: ${w}`));
    expect(found).toEqual([]);
    // The check sees the forms it looks for.
    const probe = [
      'import { agentModel, type AgentRecord } from "../agents";',
      'import { toolModel } from "../tools";',
      "MongoMixin((db) => ({ tools: toolModel(db) }));",
      "await agentModel(db).updateOne({ _id: 1 }, {});",
      "await uow.put(agentModel(db), 1, null, {}, \"agent\");",
      "await this.models.tools.deleteMany({});",
      "await agentModel(db).find({ account_id: 1 }).lean();",
    ].join("\n");
    expect(foreignModelWrites(probe)).toEqual(["agentModel(db).updateOne(", ".put(agentModel(", "this.models.tools.deleteMany("]);
  });
});
