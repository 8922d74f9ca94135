import { stopAll } from "./processes";

/** Exit codes of a bench stopped by a signal (128 + the signal's number), as a shell reports them. */
const EXIT_INTERRUPTED = 130;
const EXIT_TERMINATED = 143;

/** Something the bench stops when it shuts down: a server it started, a database it wrote into. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** What a bench's main is given to hand over its resources and bound its run time. */
export interface Lifecycle {
  /** Stops `resource` at shutdown, after the child processes and before whatever was owned earlier; returns it. */
  own<T extends Stoppable>(resource: T): T;
  /** Shuts the bench down with code 1 if it still runs after `budgetMs`; returns the function that disarms it. */
  startWatchdog(budgetMs: number): () => void;
}

const owned: Stoppable[] = [];
let stopping: Promise<number> | undefined;

/**
 * Stops the child processes, then the owned resources (last owned first, each best effort), and exits.
 * Later calls (a failing wait noticing a stopped child, a second signal) wait for the first and keep its exit code.
 */
async function shutdown(code: number, reason?: string): Promise<never> {
  stopping ??= (async () => {
    if (reason) console.error(reason);
    await stopAll();
    for (const resource of owned.reverse()) {
      await resource.stop().catch((err: unknown) => console.error(`cleanup failed: ${err instanceof Error ? err.message : String(err)}`));
    }
    return code;
  })();
  process.exit(await stopping);
}

/** Runs `main` as a bench: a signal, a failure or success shuts it down once, stopping everything it started. */
export function runBench(main: (lifecycle: Lifecycle) => Promise<void>): void {
  process.once("SIGINT", () => void shutdown(EXIT_INTERRUPTED, "interrupted"));
  process.once("SIGTERM", () => void shutdown(EXIT_TERMINATED, "terminated"));
  const lifecycle: Lifecycle = {
    own: (resource) => (owned.push(resource), resource),
    startWatchdog(budgetMs) {
      const watchdog = setTimeout(() => void shutdown(1, `bench exceeded ${budgetMs / 1000} s, stopped`), budgetMs);
      return () => clearTimeout(watchdog);
    },
  };
  main(lifecycle).then(
    () => shutdown(0),
    (err: unknown) => shutdown(1, err instanceof Error ? (err.stack ?? err.message) : String(err)),
  );
}
