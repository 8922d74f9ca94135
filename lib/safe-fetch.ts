import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Readable, Transform } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import zlib from "node:zlib";
import { classifyAddress, isAddressAllowed, PUBLIC_ONLY, type AddressPolicy } from "./address-policy";
import type { HostLimiter } from "./host-limiter";

/** Our robots.txt product token and User-Agent: site owners can address and identify the loader. */
export const BOT_TOKEN = "AgentPlatformBot";
export const USER_AGENT = `${BOT_TOKEN}/1.0`;

const MAX_REDIRECTS = 5;
const DEFAULT_TIMEOUT_MS = 15_000;
/** Largest body (after decoding) we keep; more is a hostile or useless page. */
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
/** Retries after the first attempt; with the backoff below a dead host costs at most a few seconds. */
const DEFAULT_RETRIES = 3;
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 8_000;
/** Longest Retry-After we wait for; a server asking for more is given up on (the error carries its wish). */
const RETRY_AFTER_CAP_MS = 30_000;
/** 500 is included: busy CMSs answer 500 under load and succeed on the next try. */
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const KEEP_ALIVE_AGENTS = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 64 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/** Why a fetch failed, so the loader can tell a skipped page from a broken source and write loading_error. */
export type FetchErrorKind =
  | "bad-url"
  | "blocked-address"
  | "timeout"
  | "too-large"
  | "too-many-redirects"
  | "http-status"
  | "bad-content-type"
  | "decode"
  | "network";

/** The one error safeFetch throws; `kind` is stable, `message` is fit for loading_error. */
export class FetchError extends Error {
  override readonly name = "FetchError";
  constructor(
    readonly kind: FetchErrorKind,
    message: string,
    readonly url: string,
    readonly details: { status?: number; retryAfterMs?: number; retryable?: boolean } = {},
  ) {
    super(message);
  }
  get status(): number | undefined {
    return this.details.status;
  }
}

/** What a successful fetch returns: the final URL after redirects and the decoded body (empty for a 304 to a conditional request). */
export interface FetchResponse {
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Media type only, lower-cased ("text/html"); "" when the server sent none. */
  contentType: string;
}

/** A dns.lookup-shaped resolver; injectable for custom DNS (and for tests that must not reach real addresses). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface SafeFetchOptions {
  headers?: Record<string, string>;
  /** Accepted media types ("text/html", "text/*"); anything else is a bad-content-type error. A missing header passes. */
  accept?: string[];
  timeoutMs?: number;
  maxBytes?: number;
  retries?: number;
  backoffBaseMs?: number;
  limiter?: HostLimiter;
  signal?: AbortSignal;
  resolver?: Resolver;
  /** Which non-public addresses may be reached (the configuration's addressPolicy); default: public ones only. */
  policy?: AddressPolicy;
}

const defaultResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * A lookup for http.request that resolves, refuses the whole name if any address is blocked, and hands the
 * checked addresses to the socket: the address connected to is the one checked, so DNS rebinding cannot
 * slip in between check and connect.
 */
export function guardedLookup(url: string, policy: AddressPolicy, resolver: Resolver = defaultResolver): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    resolver(hostname).then(
      (addresses) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const usable = addresses.filter((a) => !family || a.family === family);
        const blocked = usable.find((a) => !isAddressAllowed(a.address, policy));
        if (blocked) return callback(blockedError(url, blocked.address));
        if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }));
        if (options.all) return callback(null, usable);
        callback(null, usable[0].address, usable[0].family);
      },
      (err) => callback(err),
    );
  }) as net.LookupFunction;
}

function blockedError(url: string, address: string): FetchError {
  return new FetchError("blocked-address", `refused to connect to ${url}: ${address} is a ${classifyAddress(address)} address`, url);
}

type HopResult = { redirect: string } | { response: FetchResponse };

function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0].trim().toLowerCase();
}

function accepted(type: string, accept: string[] | undefined): boolean {
  if (!accept || type === "") return true;
  return accept.some((a) => a === type || (a.endsWith("/*") && type.startsWith(a.slice(0, -1))));
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function decoderFor(encoding: string | undefined): Transform | undefined {
  switch ((encoding ?? "identity").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
    case "deflate":
      return zlib.createUnzip();
    case "br":
      return zlib.createBrotliDecompress();
    default:
      return undefined;
  }
}

/** Reads a response body, decoding it and aborting as soon as the decoded size passes maxBytes (zip bombs included). */
function readBody(res: http.IncomingMessage, url: string, maxBytes: number): Promise<Buffer> {
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    return Promise.reject(new FetchError("too-large", `${url} is ${declared} bytes, over the ${maxBytes}-byte limit`, url));
  }
  const encoding = res.headers["content-encoding"];
  const decoder = decoderFor(encoding);
  if (!decoder && encoding && !/^\s*identity\s*$/i.test(encoding)) {
    res.destroy();
    return Promise.reject(new FetchError("decode", `${url} uses unsupported content-encoding ${encoding}`, url));
  }
  const stream: Readable = decoder ? res.pipe(decoder) : res;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: FetchError) => {
      res.destroy();
      decoder?.destroy();
      reject(err);
    };
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(new FetchError("too-large", `${url} is over the ${maxBytes}-byte limit`, url));
      chunks.push(chunk);
    });
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    // The response's own errors (a connection cut before the body's end: "aborted") are the network's, retried;
    // only the decoder's are the body's.
    decoder?.on("error", (err: Error) =>
      fail(err instanceof FetchError ? err : new FetchError("decode", `${url}: cannot decode ${encoding} body (${err.message})`, url)),
    );
    res.on("error", (err) => fail(err instanceof FetchError ? err : new FetchError("network", `${url}: the connection ended mid-body (${err.message})`, url, { retryable: true })));
  });
}

/** One request to one URL (no redirect following, no retry), with the address guard and the time limit. */
function requestOnce(target: URL, opts: SafeFetchOptions): Promise<HopResult> {
  const url = target.href;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const hostname = target.hostname.replace(/^\[|\]$/g, "");
  const policy = opts.policy ?? PUBLIC_ONLY;
  // IP literals never reach the lookup function, so they are checked here.
  if (net.isIP(hostname) && !isAddressAllowed(hostname, policy)) return Promise.reject(blockedError(url, hostname));
  if (opts.signal?.aborted) return Promise.reject(new FetchError("timeout", `${url}: fetch cancelled`, url));
  const client = target.protocol === "https:" ? https : http;
  return new Promise<HopResult>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const fail = (err: FetchError) => finish(() => (req.destroy(), reject(err)));
    const timer = setTimeout(() => fail(new FetchError("timeout", `${url} did not answer within ${timeoutMs} ms`, url, { retryable: true })), timeoutMs);
    const onAbort = () => fail(new FetchError("timeout", `${url}: fetch cancelled`, url));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const req = client.request(target, {
      method: "GET",
      agent: KEEP_ALIVE_AGENTS[target.protocol as "http:" | "https:"],
      lookup: guardedLookup(url, policy, opts.resolver ?? defaultResolver),
      headers: { "user-agent": USER_AGENT, "accept-encoding": "gzip, deflate, br", accept: opts.accept?.join(", ") || "*/*", ...opts.headers },
    });
    req.on("error", (err: Error & { code?: string }) =>
      fail(err instanceof FetchError ? err : new FetchError("network", `${url}: ${err.code ?? err.message}`, url, { retryable: true })),
    );
    req.on("response", (res) => {
      // A kept-alive socket may have been opened for a caller with another policy: the peer is checked every time.
      const peer = res.socket.remoteAddress;
      if (peer && !isAddressAllowed(peer, policy)) return fail(blockedError(url, peer));
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        res.resume();
        return finish(() => resolve({ redirect: new URL(location, target).href }));
      }
      // A conditional request (If-None-Match / If-Modified-Since) answered "not modified": an empty success.
      if (status === 304 && isConditional(opts.headers)) {
        res.resume();
        return finish(() => resolve({ response: { url, status, headers: res.headers, body: Buffer.alloc(0), contentType: "" } }));
      }
      if (status < 200 || status > 299) {
        res.resume();
        const retryAfterMs = parseRetryAfter(res.headers["retry-after"] as string | undefined);
        return fail(new FetchError("http-status", `${url} answered HTTP ${status}`, url, { status, retryAfterMs, retryable: RETRYABLE_STATUSES.has(status) }));
      }
      const contentType = mediaType(res.headers["content-type"]);
      if (!accepted(contentType, opts.accept)) {
        res.destroy();
        return fail(new FetchError("bad-content-type", `${url} is ${contentType}, expected ${opts.accept!.join(" or ")}`, url));
      }
      readBody(res, url, maxBytes).then(
        (body) => finish(() => resolve({ response: { url, status, headers: res.headers, body, contentType } })),
        (err: FetchError) => fail(err),
      );
    });
    req.end();
  });
}

function isConditional(headers: Record<string, string> | undefined): boolean {
  return Object.keys(headers ?? {}).some((name) => /^if-(none-match|modified-since)$/i.test(name));
}

/** Full-jitter exponential backoff, or the server's Retry-After when it gave one. */
function retryDelay(err: FetchError, attempt: number, baseMs: number): number {
  if (err.details.retryAfterMs !== undefined) return err.details.retryAfterMs;
  return Math.random() * Math.min(BACKOFF_MAX_MS, baseMs * 2 ** attempt);
}

/** One hop with retries; the host slot is held per attempt, not while backing off, so other pages proceed. */
async function requestWithRetries(target: URL, opts: SafeFetchOptions): Promise<HopResult> {
  const retries = opts.retries ?? DEFAULT_RETRIES;
  for (let attempt = 0; ; attempt++) {
    const release = opts.limiter ? await opts.limiter.acquire(target.host) : undefined;
    try {
      return await requestOnce(target, opts);
    } catch (err) {
      if (!(err instanceof FetchError) || !err.details.retryable || attempt >= retries || opts.signal?.aborted) throw err;
      if ((err.details.retryAfterMs ?? 0) > RETRY_AFTER_CAP_MS) throw err;
      release?.();
      await sleep(retryDelay(err, attempt, opts.backoffBaseMs ?? BACKOFF_BASE_MS), undefined, { signal: opts.signal }).catch(() => {
        throw err;
      });
    } finally {
      release?.();
    }
  }
}

/**
 * GET a URL for the knowledge loader: only http(s), every hop's address checked after DNS resolution, at most
 * 5 redirects, bounded time and size, decoded body, retries on 408/429/5xx and network errors.
 * Throws FetchError; non-2xx answers are errors too, except 304 to a request that sent If-None-Match or
 * If-Modified-Since.
 */
export async function safeFetch(url: string, opts: SafeFetchOptions = {}): Promise<FetchResponse> {
  let current = url;
  let hopOpts = opts;
  let origin: string | undefined;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    let target: URL;
    try {
      target = new URL(current);
    } catch {
      throw new FetchError("bad-url", `not a URL: ${current}`, current);
    }
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      throw new FetchError("bad-url", `only http and https URLs can be fetched: ${current}`, current);
    }
    if (origin !== undefined && target.origin !== origin) hopOpts = withoutCredentials(hopOpts);
    origin = target.origin;
    const result = await requestWithRetries(target, hopOpts);
    if ("response" in result) return result.response;
    current = result.redirect;
  }
  throw new FetchError("too-many-redirects", `${url}: more than ${MAX_REDIRECTS} redirects`, url);
}

/** Credentials stay with the origin they were meant for: once a redirect leaves it, Authorization and Cookie are dropped. */
function withoutCredentials(opts: SafeFetchOptions): SafeFetchOptions {
  if (!opts.headers) return opts;
  const headers = Object.fromEntries(Object.entries(opts.headers).filter(([k]) => !/^(authorization|cookie)$/i.test(k)));
  return { ...opts, headers };
}
