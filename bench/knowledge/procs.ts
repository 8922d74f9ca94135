import { readdirSync, readFileSync } from "node:fs";

// CPU accounting from Linux /proc; the processes themselves are bench/processes.ts's.

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
