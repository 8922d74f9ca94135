/** The slice of autocannon's programmatic API the bench uses; the package ships no typings. */
declare module "autocannon" {
  interface Options {
    url: string;
    connections: number;
    /** Seconds. */
    duration: number;
    headers?: Record<string, string>;
    /** Seconds a request may take before it counts as a timeout (default 10). */
    timeout?: number;
    method?: string;
    body?: string;
    /** Requests each connection sends in turn; setupRequest may rewrite one before it goes (e.g. a unique body). */
    requests?: { method?: string; path?: string; body?: string; headers?: Record<string, string>; setupRequest?(req: Request): Request }[];
  }
  interface Request {
    method?: string;
    path?: string;
    body?: string;
    headers?: Record<string, string>;
  }
  interface Result {
    /** Per-second samples of completed requests. */
    requests: { average: number; total: number };
    errors: number;
    timeouts: number;
    non2xx: number;
  }
  interface Instance extends Promise<Result> {
    /** Fires per response; `responseTime` is in milliseconds with sub-millisecond precision. */
    on(event: "response", listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
  }
  function autocannon(options: Options): Instance;
  export = autocannon;
}
