import { availableParallelism } from "node:os";
import { ERRORS } from "../errors";

/** Bounds of one process's password hashing. */
export interface HashingBounds {
  /** Hashes computed at once (each takes a core for ~50 ms). */
  concurrency: number;
  /** Attempts admitted beyond those hashing (waiting for a slot); past this, new attempts are refused at once. */
  maxWaiting: number;
  /** Attempts one client address may have admitted; past this, its new attempts are refused at once. */
  maxPerClient: number;
}

/** Seconds a refused attempt is told to wait: a queue drains within about a second. */
const RETRY_AFTER_SECONDS = 1;

/** Runs one hash in a free slot of the queue (waiting for one); given to the work an admitted attempt does. */
export type HashSlot = <H>(hash: () => Promise<H>) => Promise<H>;

/**
 * A small queue in front of password hashing (scrypt, the most expensive thing a request can make a process do).
 * A burst of logins would otherwise start hundreds of hashes at once, and every caller's request, logins of other
 * people included, would wait behind them until it timed out. Here an attempt is first admitted (at most
 * `concurrency + maxWaiting` at once, of which `maxPerClient` per client address), and everything beyond answers
 * 429 with Retry-After at once, before any database write or hashing: one address's burst cannot fill the queue
 * against everybody else. Admitted attempts hash at most `concurrency` at a time.
 */
export class HashingQueue {
  private admitted = 0;
  private hashing = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly perClient = new Map<string, number>();

  constructor(private readonly bounds: HashingBounds) {}

  /**
   * Admits one attempt of `clientIp` and runs `work` with a slot for its hashes (the work may first do cheap
   * things, like reserving the attempt in the throttle); throws 429 when the client or the queue is full.
   */
  async admit<T>(clientIp: string | undefined, work: (slot: HashSlot) => Promise<T>): Promise<T> {
    const client = clientIp ?? "unknown";
    const held = this.perClient.get(client) ?? 0;
    if (held >= this.bounds.maxPerClient) {
      throw ERRORS.tooManyRequests("Too many password checks in progress from this address; try again shortly", RETRY_AFTER_SECONDS);
    }
    if (this.admitted >= this.bounds.concurrency + this.bounds.maxWaiting) {
      throw ERRORS.tooManyRequests("Too many password checks in progress; try again shortly", RETRY_AFTER_SECONDS);
    }
    this.admitted++;
    this.perClient.set(client, held + 1);
    try {
      return await work((hash) => this.inSlot(hash));
    } finally {
      this.admitted--;
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left > 0) this.perClient.set(client, left);
      else this.perClient.delete(client);
    }
  }

  /** admit() for an attempt that only hashes. */
  run<T>(clientIp: string | undefined, hash: () => Promise<T>): Promise<T> {
    return this.admit(clientIp, (slot) => slot(hash));
  }

  private async inSlot<H>(hash: () => Promise<H>): Promise<H> {
    if (this.hashing < this.bounds.concurrency) this.hashing++;
    // A finishing hash hands its slot straight to the next waiter, so `hashing` stays counted.
    else await new Promise<void>((start) => this.waiting.push(start));
    try {
      return await hash();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.hashing--;
    }
  }
}

/**
 * This process's password hashing: one hash per core (scrypt runs on libuv's pool, 4 threads by default), a few
 * waiting per core, 4 per address. Shared by every service in the process, since they share its cores.
 */
const HASHING_CORES = Math.max(1, Math.min(4, availableParallelism()));
export const passwordHashing = new HashingQueue({ concurrency: HASHING_CORES, maxWaiting: 8 * HASHING_CORES, maxPerClient: 4 });
