import { availableParallelism } from "node:os";
import { ERRORS } from "../errors";

/** Bounds of one process's password hashing. */
export interface HashingBounds {
  /** Hashes computed at once (each takes a core for ~50 ms). */
  concurrency: number;
  /** Attempts waiting for a free slot; past this, new attempts are refused at once. */
  maxWaiting: number;
  /** Attempts one client address may have running or waiting; past this, its new attempts are refused at once. */
  maxPerClient: number;
}

/** Seconds a refused attempt is told to wait: a queue drains within about a second. */
const RETRY_AFTER_SECONDS = 1;

/**
 * A small queue in front of password hashing (scrypt, the most expensive thing a request can make a process do).
 * A burst of logins would otherwise start hundreds of hashes at once, and every caller's request, logins of other
 * people included, would wait behind them until it timed out. Here at most `concurrency` hashes run, a few more
 * wait, each client address holds only a few of those places, and everything beyond answers 429 with Retry-After
 * at once, before any hashing: one address's burst cannot fill the queue against everybody else.
 */
export class HashingQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly perClient = new Map<string, number>();

  constructor(private readonly bounds: HashingBounds) {}

  /** Runs `hash` when a slot is free, as an attempt of `clientIp`; throws 429 when the client or the queue is full. */
  async run<T>(clientIp: string | undefined, hash: () => Promise<T>): Promise<T> {
    const client = clientIp ?? "unknown";
    const held = this.perClient.get(client) ?? 0;
    if (held >= this.bounds.maxPerClient) {
      throw ERRORS.tooManyRequests("Too many password checks in progress from this address; try again shortly", RETRY_AFTER_SECONDS);
    }
    if (this.running >= this.bounds.concurrency && this.waiting.length >= this.bounds.maxWaiting) {
      throw ERRORS.tooManyRequests("Too many password checks in progress; try again shortly", RETRY_AFTER_SECONDS);
    }
    this.perClient.set(client, held + 1);
    try {
      if (this.running < this.bounds.concurrency) this.running++;
      // A finishing hash hands its slot straight to the next waiter, so `running` stays counted.
      else await new Promise<void>((start) => this.waiting.push(start));
      try {
        return await hash();
      } finally {
        const next = this.waiting.shift();
        if (next) next();
        else this.running--;
      }
    } finally {
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left > 0) this.perClient.set(client, left);
      else this.perClient.delete(client);
    }
  }
}

/**
 * This process's password hashing: one hash per core (scrypt runs on libuv's pool, 4 threads by default), a few
 * waiting per core, 4 per address. Shared by every service in the process, since they share its cores.
 */
const HASHING_CORES = Math.max(1, Math.min(4, availableParallelism()));
export const passwordHashing = new HashingQueue({ concurrency: HASHING_CORES, maxWaiting: 8 * HASHING_CORES, maxPerClient: 4 });
