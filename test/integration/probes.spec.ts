/**
 * The probe server every process runs on HEALTH_PORT (lib/probes.ts), over HTTP against a real process: /health as
 * the interface defines it, /health/live, and /health/ready turning false when the process's own database or NATS
 * goes away and true again when NATS is back. This file starts its own MongoDB-wire server and NATS so it can stop
 * them without touching the shared ones.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureLocalMongoBuilt, startLocalMongo, type LocalMongo } from "../../lib/local-mongo";
import { READY_TIMEOUT_MS, runChecks, typesenseAnswers } from "../../lib/probes";
import { VERSION } from "../../lib/health";
import { freePort, startNats, type RunningServer } from "../harness/servers";
import { spawnServices, type ServiceProcess } from "../harness/process";
import { until } from "../harness/wait";

let mongo: LocalMongo;
let mongoDir: string;
let nats: RunningServer;
let platform: ServiceProcess;
let base: string;

async function probe(pathname: string, method = "GET") {
  const response = await fetch(`${base}${pathname}`, { method });
  const body = response.status === 200 || response.status === 503 ? ((await response.json()) as Record<string, any>) : undefined;
  return { status: response.status, body };
}

/** Polls until the probe answers `status` (a dependency lost or back is noticed within a few seconds). */
async function probeUntil(pathname: string, status: number, timeoutMs = 20_000) {
  try {
    return (await until(() => probe(pathname).catch(() => undefined), (last) => last?.status === status, timeoutMs, `${pathname} answering ${status}`))!;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${platform.output()}`);
  }
}

beforeAll(async () => {
  ensureLocalMongoBuilt();
  mongoDir = mkdtempSync(path.join(os.tmpdir(), "probes-mongo-"));
  mongo = await startLocalMongo({ dataDir: mongoDir });
  nats = await startNats();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  platform = spawnServices(["agents"], {
    TRANSPORTER: nats.url,
    NAMESPACE: "probes",
    MONGO_URL: `${mongo.url}/probes`,
    HEALTH_PORT: String(port),
    SERVER_NAME: "probe-test",
  });
  await probeUntil("/health/ready", 200, 60_000);
}, 90_000);

afterAll(async () => {
  await platform?.kill();
  await nats?.stop();
  await mongo?.stop().catch(() => {});
  rmSync(mongoDir, { recursive: true, force: true });
});

describe("probe server (HEALTH_PORT)", () => {
  it("answers GET /health exactly as the interface defines it", async () => {
    const { status, body } = await probe("/health");
    expect(status).toBe(200);
    expect(body).toEqual({ status: "healthy", server: "probe-test", version: VERSION, api_url: expect.any(String) });
  });

  it("answers /health/live while the process runs its services", async () => {
    expect(await probe("/health/live")).toEqual({ status: 200, body: { status: "alive" } });
  });

  it("answers /health/ready with each dependency it checked", async () => {
    expect(await probe("/health/ready")).toEqual({
      status: 200,
      body: { status: "ready", checks: { database: { status: "ok" }, transporter: { status: "ok" } } },
    });
  });

  it("answers 404 off its paths and 405 to other methods", async () => {
    expect((await probe("/health/other")).status).toBe(404);
    expect((await probe("/health/ready", "POST")).status).toBe(405);
  });

  it("turns not ready while NATS is gone, stays live, and ready again when NATS is back", async () => {
    const port = Number(new URL(nats.url).port);
    await nats.stop();
    const down = await probeUntil("/health/ready", 503);
    expect(down.body).toMatchObject({ status: "not_ready", checks: { database: { status: "ok" }, transporter: { status: "failed" } } });
    expect((await probe("/health/live")).status).toBe(200);
    nats = await startNats(port);
    await probeUntil("/health/ready", 200);
  }, 60_000);

  it("turns not ready when the database goes away, while /health/live and /health still answer 200", async () => {
    await mongo.stop();
    const started = Date.now();
    const down = await probeUntil("/health/ready", 503);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(down.body).toMatchObject({ status: "not_ready", checks: { database: { status: "failed" }, transporter: { status: "ok" } } });
    expect(down.body!.checks.database.error).toEqual(expect.any(String));
    expect((await probe("/health/live")).status).toBe(200);
    expect((await probe("/health")).status).toBe(200);
  }, 30_000);
});

describe("readiness checks", () => {
  it("reach Typesense's /health, and fail on a port where nothing answers", async () => {
    await expect(typesenseAnswers(process.env.TEST_TYPESENSE_URL!)).resolves.toBeUndefined();
    const closed = await freePort();
    const { ready, checks } = await runChecks({ typesense: () => typesenseAnswers(`http://127.0.0.1:${closed}`) });
    expect(ready).toBe(false);
    expect(checks.typesense!.status).toBe("failed");
  });

  it("bound a dependency that never answers by the readiness timeout", async () => {
    const started = Date.now();
    const { ready, checks } = await runChecks({ hung: () => new Promise<void>(() => {}) }, 300);
    expect(ready).toBe(false);
    expect(checks.hung).toEqual({ status: "failed", error: "no answer within 300 ms" });
    expect(Date.now() - started).toBeLessThan(READY_TIMEOUT_MS);
  });
});
