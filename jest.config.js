/** Unit tests run anywhere; integration tests share one NATS + MongoDB-compatible server started in global setup. */
/** Deadlines scale for a busy machine (test/harness/wait.ts, TIME_SCALE): a passing test takes what it takes. */
const timeScale = Number(process.env.TEST_TIME_SCALE) || 3;

const project = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.spec.ts"],
  // The spec comparing the two servers runs in the second-opinion project only.
  testPathIgnorePatterns: ["/node_modules/", "/second-opinion\\.spec\\.ts$"],
  // Type checking is `npm run typecheck`; tests only transpile, which keeps them fast.
  transform: { "^.+\\.ts$": ["ts-jest", { isolatedModules: true, diagnostics: false }] },
  setupFiles: ["<rootDir>/test/harness/env.ts"],
};

/**
 * A second opinion on the database server (docs/adr/0048-second-opinion-on-embedded-store.md): the query-semantics, tenancy-guard
 * and index specs run once more on mongo-java-server, an implementation of the wire protocol independent of the
 * local FerretDB build, and second-opinion.spec.ts compares the two. Its own global setup starts that server only
 * when a run includes these specs.
 */
const secondOpinion = {
  ...project,
  displayName: "mongo-java-server",
  testMatch: ["**/integration/{query-semantics,tenancy-guard,indexes,second-opinion}.spec.ts"],
  testPathIgnorePatterns: ["/node_modules/"],
  setupFiles: [...project.setupFiles, "<rootDir>/test/harness/second-opinion-env.ts"],
  globalSetup: "<rootDir>/test/harness/second-opinion-setup.ts",
};

module.exports = {
  projects: [project, secondOpinion],
  globalSetup: "<rootDir>/test/harness/global-setup.ts",
  globalTeardown: "<rootDir>/test/harness/global-teardown.ts",
  testTimeout: 60_000 * timeScale,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/harness/totals-reporter.js"],
};
