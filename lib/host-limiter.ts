/** Requests at once per host when the caller sets no cap. */
const DEFAULT_MAX_PER_HOST = 4;

/** Caps concurrent requests per host (host:port) so one source cannot hammer a site, whatever its batch size. */
export class HostLimiter {
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(readonly maxPerHost = DEFAULT_MAX_PER_HOST) {}

  /** Waits for a slot on `host`; call the returned function exactly once to free it. */
  async acquire(host: string): Promise<() => void> {
    if ((this.active.get(host) ?? 0) >= this.maxPerHost) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(host) ?? [];
        queue.push(resolve);
        this.waiting.set(host, queue);
      });
    } else {
      this.active.set(host, (this.active.get(host) ?? 0) + 1);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.get(host)?.shift();
      if (next) return next(); // the slot passes straight to the next waiter
      const count = (this.active.get(host) ?? 1) - 1;
      if (count === 0) this.active.delete(host), this.waiting.delete(host);
      else this.active.set(host, count);
    };
  }
}
