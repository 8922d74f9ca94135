import { loadConfig } from "../../lib/config";

/** The configuration tree is built from a plain object: tests give settings, they do not edit process.env. */
describe("loadConfig", () => {
  const base = { JWT_SECRET: "x".repeat(32) };

  it("gives the documented defaults", () => {
    const config = loadConfig(base);
    expect(config.mcp).toEqual({ port: 3100, host: "0.0.0.0" });
    expect(config.scheduler).toEqual({ pollMs: 1000, batchSize: 100 });
    expect(config.loader).toEqual({ windowSeconds: 600, maxWindows: 24, leaseSeconds: 30, concurrency: 4, accountConcurrency: 2, pollMs: 500, batchSize: 50, perHostConcurrency: 8, sitemapPageCeiling: 10_000 });
    expect(config.webhooks.retryScheduleMs).toEqual([5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(config.events).toEqual({ pollMs: 1000, leaseMs: 30_000, abandonedAfterMs: 30_000, retentionDays: 7, pendingRetentionDays: 30 });
    expect(config).toMatchObject({ defaultModel: "gpt-4o-mini", onboardingTaskEnabled: false, secretsKey: base.JWT_SECRET, port: 3000 });
  });

  it("reads MCP_PORT and MCP_HOST and refuses a port that is not one", () => {
    expect(loadConfig({ ...base, MCP_PORT: "4200", MCP_HOST: "127.0.0.1" }).mcp).toEqual({ port: 4200, host: "127.0.0.1" });
    for (const bad of ["http", "70000", "-1", "31.5"]) expect(() => loadConfig({ ...base, MCP_PORT: bad })).toThrow(/MCP_PORT/);
  });

  it("parses retry schedules with units and refuses entries without one", () => {
    expect(loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: "100ms, 1.5s ,1d" }).webhooks.retryScheduleMs).toEqual([100, 1500, 86_400_000]);
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: "5,10s" })).toThrow('WEBHOOK_RETRY_SCHEDULE: "5" is not a duration');
  });

  it("lets an operator lower the sitemap page ceiling, never raise it", () => {
    expect(loadConfig({ ...base, SITEMAP_PAGE_CEILING: "300" }).loader.sitemapPageCeiling).toBe(300);
    expect(loadConfig({ ...base, SITEMAP_PAGE_CEILING: "20000" }).loader.sitemapPageCeiling).toBe(10_000);
  });

  it("refuses numbers out of range instead of running with NaN", () => {
    expect(() => loadConfig({ ...base, SCHEDULER_POLL_MS: "0" })).toThrow(/SCHEDULER_POLL_MS must be an integer of at least 1/);
    expect(() => loadConfig({ ...base, HYBRID_ALPHA: "2" })).toThrow(/HYBRID_ALPHA must be a number from 0 to 1/);
  });
});
