import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ensureLocalMongoBuilt, startLocalMongo } from "../../lib/local-mongo";

/** A server the test run started, with how to stop it. */
export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

/** The URL of one database on a MongoDB server URL (each test file and bench run gets its own). */
export function databaseUrl(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A free TCP port on loopback (bound and released; the race is acceptable for a test harness). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(port: number, timeoutMs: number, host = "127.0.0.1"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, host);
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.once("exit", () => (clearTimeout(kill), resolve()));
    child.kill("SIGTERM");
  });
}

/** Debian's nats-server, where .ci/run installs it. */
function natsBinary(): string {
  for (const candidate of ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]) {
    if (existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync("which", ["nats-server"], { encoding: "utf8" }).trim();
  } catch {
    throw new Error("nats-server is not installed: run `apt-get install -y nats-server` (see .ci/run)");
  }
}

/** Starts nats-server on loopback (a free port unless given: restarting on the same port), with JetStream in a temporary store. */
export async function startNats(port?: number): Promise<RunningServer> {
  port ??= await freePort();
  const storeDir = mkdtempSync(path.join(os.tmpdir(), "nats-js-"));
  const child = spawn(natsBinary(), ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  await waitForPort(port, 10_000);
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      await stopChild(child);
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/** Whether a Docker engine answers here (then testcontainers can run the real mongo image). */
function dockerAnswers(): boolean {
  try {
    execFileSync("docker", ["info"], { stdio: "ignore", timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * A real MongoDB-wire server, in the order the project promises: MONGO_URL if set, a mongo container when
 * a Docker engine answers, otherwise the locally built MongoDB-compatible server.
 */
export async function startMongo(): Promise<RunningServer & { kind: string }> {
  if (process.env.MONGO_URL) return { kind: "MONGO_URL", url: process.env.MONGO_URL, stop: async () => {} };
  if (dockerAnswers()) {
    const { GenericContainer } = await import("testcontainers");
    const container = await new GenericContainer("mongo:7").withExposedPorts(27017).start();
    return {
      kind: "testcontainers mongo:7",
      url: `mongodb://${container.getHost()}:${container.getMappedPort(27017)}`,
      stop: async () => void (await container.stop()),
    };
  }
  ensureLocalMongoBuilt();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "mongo-data-"));
  const local = await startLocalMongo({ dataDir });
  return {
    kind: "local MongoDB-compatible server",
    url: local.url,
    async stop() {
      await local.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
