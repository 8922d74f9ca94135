/** Unit tests run anywhere; integration tests share one NATS + MongoDB-compatible server started in global setup. */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.spec.ts"],
  transform: { "^.+\\.(t|j)s$": ["@swc/jest", { jsc: { target: "es2023" }, module: { type: "commonjs" } }] },
  transformIgnorePatterns: ["/node_modules/(?!(jose)/)"],
  globalSetup: "<rootDir>/test/harness/global-setup.ts",
  globalTeardown: "<rootDir>/test/harness/global-teardown.ts",
  testTimeout: 30000,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/harness/totals-reporter.js"],
};
