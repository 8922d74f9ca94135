import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ensureLocalMongoBuilt, repoRoot, startLocalMongo } from "../../lib/local-mongo";
import { scaled } from "./wait";

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

/**
 * Servers a test starts get ports from below the kernel's ephemeral range (32768-60999 on Linux): a port checked
 * free and released there can be taken by an outgoing connection before the server listens, and a chart cluster's
 * thirty processes open hundreds of them. Each jest worker draws from its own slice of the range, and a process
 * never hands out a port twice: a chart cluster picks some sixty ports before any of its processes listens, and
 * random picks from one shared range collided often enough to fail a CI run.
 */
const PORT_RANGE = { from: 20_000, to: 32_000 };
const PORT_SLICES = 8;
const handedOut = new Set<number>();

function portSlice(): { from: number; size: number } {
  const size = Math.floor((PORT_RANGE.to - PORT_RANGE.from) / PORT_SLICES);
  const worker = Number(process.env.JEST_WORKER_ID ?? 0);
  return { from: PORT_RANGE.from + (worker % PORT_SLICES) * size, size };
}

/** A free TCP port on loopback, for a server the test starts. */
export async function freePort(): Promise<number> {
  const { from, size } = portSlice();
  for (;;) {
    const port = from + Math.floor(Math.random() * size);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(port: number, timeoutMs: number, host = "127.0.0.1"): Promise<void> {
  timeoutMs = scaled(timeoutMs);
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

function findNatsServer(): string | undefined {
  for (const candidate of ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]) {
    if (existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync("which", ["nats-server"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Debian's nats-server, installed with apt the first time a run needs it (as root, like .ci/run does). */
function natsBinary(): string {
  const found = findNatsServer();
  if (found) return found;
  if (process.getuid?.() !== 0) throw new Error("nats-server is not installed and this is not root: run `sudo apt-get install -y nats-server`");
  const apt = (args: string[]) =>
    execFileSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  try {
    apt(["install", "-y", "-qq", "nats-server"]);
  } catch {
    // A fresh machine has no package lists yet.
    apt(["update", "-qq"]);
    apt(["install", "-y", "-qq", "nats-server"]);
  }
  const installed = findNatsServer();
  if (!installed) throw new Error("apt-get installed nats-server but it is not on the PATH");
  return installed;
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

/** The Typesense version the harness runs (the only one any registry here serves, see scripts/typesense/fetch.sh). */
export const TYPESENSE_VERSION = process.env.TYPESENSE_VERSION || "0.24.1";

/** The Typesense server binary, fetched into .cache/typesense on first use. */
function typesenseBinary(): string {
  const binary = path.join(repoRoot(), ".cache", "typesense", `typesense-server-${TYPESENSE_VERSION}`);
  if (!existsSync(binary)) {
    execFileSync("bash", [path.join(repoRoot(), "scripts", "typesense", "fetch.sh")], {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TYPESENSE_VERSION },
    });
  }
  return binary;
}

/** Resolves once Typesense answers /health with ok (it serves HTTP before its raft group is ready). */
async function waitForTypesense(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  timeoutMs = scaled(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`typesense-server exited with code ${child.exitCode}`);
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) })
      .then(async (r) => ((await r.json()) as { ok?: boolean }).ok === true)
      .catch(() => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Typesense at ${url} is not healthy after ${timeoutMs} ms`);
}

/**
 * A Typesense server: the one TYPESENSE_URL names (with TYPESENSE_API_KEY), or typesense-server on free
 * loopback ports (API and raft peering) with a temporary data directory and a random API key.
 */
export async function startTypesense(): Promise<RunningServer & { apiKey: string; kind: string; pid?: number }> {
  if (process.env.TYPESENSE_URL) {
    const url = process.env.TYPESENSE_URL.replace(/\/+$/, "");
    await waitForTypesense(url, 10_000);
    return { kind: "TYPESENSE_URL", url, apiKey: process.env.TYPESENSE_API_KEY ?? "", stop: async () => {} };
  }
  const binary = typesenseBinary();
  const [apiPort, peeringPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "typesense-data-"));
  const apiKey = randomBytes(16).toString("hex");
  const child = spawn(
    binary,
    ["--data-dir", dataDir, "--api-key", apiKey, "--api-address", "127.0.0.1", "--api-port", String(apiPort),
      "--peering-address", "127.0.0.1", "--peering-port", String(peeringPort), "--enable-cors=false"],
    { stdio: ["ignore", "ignore", "ignore"] },
  );
  const url = `http://127.0.0.1:${apiPort}`;
  try {
    await waitForTypesense(url, 30_000, child);
  } catch (err) {
    await stopChild(child);
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    kind: `typesense-server ${TYPESENSE_VERSION}`,
    url,
    apiKey,
    pid: child.pid,
    async stop() {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
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
  const local = await startLocalMongo({ dataDir, readyTimeoutMs: scaled(40_000) });
  return {
    kind: "local MongoDB-compatible server",
    url: local.url,
    async stop() {
      await local.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * mongo-java-server (in memory, see scripts/mongo-java), an implementation of the MongoDB wire protocol
 * independent of FerretDB: the second opinion some specs also run against (jest.config.js).
 */
export async function startMongoJava(): Promise<RunningServer & { kind: string }> {
  const cache = path.join(repoRoot(), ".cache", "mongo-java");
  execFileSync("bash", [path.join(repoRoot(), "scripts", "mongo-java", "fetch.sh")], { stdio: ["ignore", "ignore", "inherit"] });
  const jar = readdirSync(path.join(cache, "lib")).find((f) => /^mongo-java-server-core-.*\.jar$/.test(f));
  // A small heap and the quick JIT: the specs' data is small and a run is short.
  const child = spawn("java", ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", `${cache}/classes:${cache}/lib/*`, "SecondOpinion", "0"], {
    stdio: ["pipe", "pipe", "ignore"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("mongo-java-server did not start in 30 s")), 30_000);
    child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`mongo-java-server exited with code ${code}`))));
    child.stdout!.on("data", (chunk) => {
      const ready = /^listening on .*:(\d+)$/m.exec((out += chunk));
      if (ready) (clearTimeout(timer), resolve(Number(ready[1])));
    });
  });
  return { kind: jar?.replace(/-core-(.*)\.jar$/, " $1") ?? "mongo-java-server", url: `mongodb://127.0.0.1:${port}`, stop: () => stopChild(child) };
}
