import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_CHARS = 4_000;

/** A platform process the knowledge bench started; unlike bench/processes.ts it can be killed on its own. */
export interface Child {
  name: string;
  pid: number;
  /** Rejects with the output tail once the process exits, so waits fail fast instead of timing out. */
  exited: Promise<never>;
  readonly done: boolean;
  /** Sends a signal to this process only. */
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it has exited. */
  stop(): Promise<void>;
}

const running = new Map<number, ChildProcess>();

/** Runs `node script` (the bench's own Node) with env overrides; its output is kept for errors. */
export function startChild(name: string, script: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  const pid = child.pid;
  running.set(pid, child);
  let tail = "";
  const keep = (chunk: string) => void (tail = (tail + chunk).slice(-OUTPUT_TAIL_CHARS));
  child.stdout!.setEncoding("utf8").on("data", keep);
  child.stderr!.setEncoding("utf8").on("data", keep);
  let done = false;
  const exited = new Promise<never>((_, reject) => {
    const fail = (how: string) => {
      running.delete(pid);
      done = true;
      reject(new Error(`${name} ${how}:\n${tail.trim()}`));
    };
    child.once("error", (err) => fail(`failed to start: ${err.message}`));
    child.once("close", (code, signal) => fail(signal ? `killed by ${signal}` : `exited with code ${code}`));
  });
  exited.catch(() => {}); // an exit is only an error while someone waits on it
  return {
    name,
    pid,
    exited,
    get done() {
      return done;
    },
    kill: (signal) => void child.kill(signal),
    stop: () => stopProcess(child),
  };
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    child.once("exit", () => (clearTimeout(kill), resolve()));
    child.kill("SIGTERM");
  });
}

/** Stops every child still running, on success and failure alike. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running.values()].map(stopProcess));
}

process.on("exit", () => running.forEach((child) => child.kill("SIGKILL")));

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on every Linux we run on). */
const TICKS_PER_SECOND = 100;

function procStat(pid: number | "self"): { comm: string; ppid: number; cpuTicks: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" ");
    // After "pid (comm) ": state ppid ... utime is field 14 of the line, i.e. index 11 here, stime index 12.
    return { comm, ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** CPU seconds used so far by this process and each of its direct children (nats-server, the database, platform nodes). */
export function cpuSnapshot(names: Map<number, string>): Map<string, number> {
  const out = new Map<string, number>();
  const self = procStat("self");
  if (self) out.set("bench (site + polling)", self.cpuTicks / TICKS_PER_SECOND);
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return out;
  }
  for (const entry of entries) {
    const stat = procStat(Number(entry));
    if (!stat || stat.ppid !== process.pid) continue;
    const name = names.get(Number(entry)) ?? stat.comm;
    out.set(name, (out.get(name) ?? 0) + stat.cpuTicks / TICKS_PER_SECOND);
  }
  return out;
}

/** Busy and total time of the whole machine, from /proc/stat, to tell how saturated the cores were. */
export function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}
