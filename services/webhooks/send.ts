import http from "node:http";
import https from "node:https";
import net from "node:net";
import { classifyAddress, isAddressAllowed, type AddressPolicy } from "../../lib/address-policy";
import { FetchError, guardedLookup, parseRetryAfter, USER_AGENT } from "../../lib/safe-fetch";

/** What a receiver answered; the body is read and dropped (only the status matters). */
export interface PostResult {
  status: number;
  retryAfterMs?: number;
}

/** A delivery attempt that got no HTTP answer: refused address, timeout, network failure. */
export class PostError extends Error {
  override readonly name = "PostError";
}

function refused(address: string): PostError {
  return new PostError(`refused to deliver to ${address}: it is a ${classifyAddress(address)} address`);
}

/**
 * POSTs a delivery once: SSRF-guarded (the configured address policy, checked as lib/safe-fetch does), no redirects followed (a 3xx is
 * just a non-2xx answer), bounded by `timeoutMs`. Resolves with any HTTP status; rejects with PostError when
 * there was no answer.
 */
export function postDelivery(url: string, headers: Record<string, string>, body: string, opts: { timeoutMs: number; policy: AddressPolicy }): Promise<PostResult> {
  const { timeoutMs, policy } = opts;
  const target = new URL(url);
  const hostname = target.hostname.replace(/^\[|\]$/g, "");
  // IP literals never reach the lookup function, so they are checked here.
  if (net.isIP(hostname) && !isAddressAllowed(hostname, policy)) return Promise.reject(refused(hostname));
  const client = target.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(target, {
      method: "POST",
      lookup: guardedLookup(url, policy),
      headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "user-agent": USER_AGENT },
    });
    // Settles the attempt and tears the request down (a promise settles once; later calls are no-ops).
    const fail = (err: PostError) => {
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new PostError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on("error", (err: Error & { code?: string }) => fail(err instanceof PostError ? err : new PostError(err instanceof FetchError ? err.message : (err.code ?? err.message))));
    req.on("response", (res) => {
      const peer = res.socket.remoteAddress;
      if (peer && !isAddressAllowed(peer, policy)) return fail(refused(peer));
      res.resume();
      res.on("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, retryAfterMs: parseRetryAfter(res.headers["retry-after"] as string | undefined) });
      });
      res.on("error", (err) => fail(new PostError(err.message)));
    });
    req.end(body);
  });
}
