/** Unit tests run anywhere; integration tests share one NATS + MongoDB-compatible server started in global setup. */
/** Deadlines scale for a busy machine (test/harness/wait.ts, TIME_SCALE): a passing test takes what it takes. */
const timeScale = Number(process.env.TEST_TIME_SCALE) || 3;

module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.spec.ts"],
  // Type checking is `npm run typecheck`; tests only transpile, which keeps them fast.
  transform: { "^.+\\.ts$": ["ts-jest", { isolatedModules: true, diagnostics: false }] },
  setupFiles: ["<rootDir>/test/harness/env.ts"],
  globalSetup: "<rootDir>/test/harness/global-setup.ts",
  globalTeardown: "<rootDir>/test/harness/global-teardown.ts",
  testTimeout: 60_000 * timeScale,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/harness/totals-reporter.js"],
};
