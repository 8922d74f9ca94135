import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..");

/** A platform process started by a test: the real server entry point, killable like a crashed pod. */
export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `server.ts` with SERVICES and the given env in a child process joined to the test NATS. */
export function spawnServices(services: string[], env: Record<string, string>): ServiceProcess {
  const command = [process.execPath, "-r", path.join(__dirname, "ts-register.js"), path.join(ROOT, "server.ts")];
  return spawnProcess(command, { ...process.env, SERVICES: services.join(","), TRANSPORTER: process.env.TEST_NATS_URL!, LOG_LEVEL: "warn", ...env });
}

/** Starts `command` in the repository root with exactly `env` (nothing inherited), output kept. */
export function spawnProcess([file, ...args]: string[], env: NodeJS.ProcessEnv): ServiceProcess {
  const child = spawn(file!, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  return {
    child,
    output: () => log,
    kill: (signal = "SIGKILL") =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill(signal);
      }),
  };
}
