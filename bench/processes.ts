import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { signup, type Api } from "../test/harness/http";
import { waitForPort } from "../test/harness/servers";

const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_CHARS = 4_000;
const POLL_INTERVAL_MS = 100;
const PROBE_TIMEOUT_MS = 2_000;

/** A Node child process the bench started. */
export interface BenchProcess {
  name: string;
  pid: number;
  /** Rejects with the process's output tail once it exits, so waits fail fast instead of timing out. */
  exited: Promise<never>;
  /** True once the process has exited. */
  readonly done: boolean;
  /** Sends a signal to this process only. */
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it has exited. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** The Node flags of package.json's start script: benches run the platform as `npm start` does. */
const PLATFORM_NODE_FLAGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(path.resolve(__dirname, "..", "..", "package.json"), "utf8")) as { scripts: { start: string } };
  return pkg.scripts.start.split(/\s+/).filter((arg) => arg.startsWith("--"));
})();

/** Runs `node script` (with the start script's flags) and env overrides on the same Node as the bench; its output is kept for errors. */
export function startNode(name: string, script: string, env: Record<string, string>): BenchProcess {
  const child = spawn(process.execPath, [...PLATFORM_NODE_FLAGS, script], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  running.add(child);
  let tail = "";
  const keep = (chunk: string) => void (tail = (tail + chunk).slice(-OUTPUT_TAIL_CHARS));
  child.stdout!.setEncoding("utf8").on("data", keep);
  child.stderr!.setEncoding("utf8").on("data", keep);
  let done = false;
  const exited = new Promise<never>((_, reject) => {
    const fail = (how: string) => {
      running.delete(child);
      done = true;
      reject(new Error(`${name} ${how}:\n${tail.trim()}`));
    };
    child.once("error", (err) => fail(`failed to start: ${err.message}`));
    child.once("close", (code, signal) => fail(signal ? `killed by ${signal}` : `exited with code ${code}`));
  });
  exited.catch(() => {}); // an exit is only an error while someone waits on it
  return {
    name,
    pid: child.pid,
    exited,
    get done() {
      return done;
    },
    kill: (signal) => void child.kill(signal),
    stop: () => stop(child),
  };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    child.once("exit", () => (clearTimeout(kill), resolve()));
    child.kill("SIGTERM");
  });
}

/** Stops every child still running (SIGTERM, then SIGKILL after a grace period), on success and failure alike. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map(stop));
}

process.on("exit", () => running.forEach((child) => child.kill("SIGKILL")));

/** Resolves once GET url answers 200 (with the given headers), failing if any of `procs` exits first. */
export async function waitForOk(url: string, procs: BenchProcess[], timeoutMs: number, headers: Record<string, string> = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await Promise.race([waitForPort(Number(new URL(url).port), timeoutMs), ...procs.map((p) => p.exited)]);
  for (;;) {
    const status = await fetch(url, { headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).then(
      (res) => (void res.body?.cancel(), res.status),
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() >= deadline) throw new Error(`GET ${url} not 200 after ${timeoutMs} ms (last status ${status})`);
    await Promise.race([new Promise((r) => setTimeout(r, POLL_INTERVAL_MS)), ...procs.map((p) => p.exited)]);
  }
}

/** Signs a new user up once the users service answers (over NATS it joins after the gateway); returns the token. */
export async function signupWhenReady(api: Api, prefix: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const token = await signup(api, prefix).then((s) => s.token, () => "");
    if (token) return token;
    if (Date.now() > deadline) throw new Error(`${prefix}: signup never succeeded`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
