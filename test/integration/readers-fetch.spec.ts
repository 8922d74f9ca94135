import { HostLimiter } from "../../lib/host-limiter";
import { addressPolicy, PUBLIC_ONLY } from "../../lib/address-policy";
import { FetchError, safeFetch as guardedFetch, type SafeFetchOptions } from "../../lib/safe-fetch";
import { startFixtureSite, type FixtureSite } from "../harness/fixture-site";

/** The fixture sites are on 127.0.0.1: loopback is allowed unless a test gives another policy. */
const LOOPBACK_ALLOWED = addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" });
const safeFetch = (url: string, opts: SafeFetchOptions = {}) => guardedFetch(url, { policy: LOOPBACK_ALLOWED, ...opts });

/** Fast retries for tests; the schedule itself is safe-fetch's default. */
const quick: SafeFetchOptions = { backoffBaseMs: 20, retries: 3 };

async function fetchError(promise: Promise<unknown>): Promise<FetchError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FetchError);
  return err as FetchError;
}

describe("safeFetch against real HTTP", () => {
  let flaky: FixtureSite;
  let other: FixtureSite;
  beforeAll(async () => {
    [flaky, other] = await Promise.all([startFixtureSite("flaky"), startFixtureSite("files")]);
  });
  afterAll(async () => {
    await Promise.all([flaky?.stop(), other?.stop()]);
  });

  describe("responses", () => {
    it("returns final URL, status, media type and body, sending our User-Agent", async () => {
      const res = await safeFetch(`${flaky.baseUrl}/_/echo-headers`);
      expect(res).toMatchObject({ url: `${flaky.baseUrl}/_/echo-headers`, status: 200, contentType: "application/json" });
      expect(JSON.parse(res.body.toString())["user-agent"]).toMatch(/^AgentPlatformBot\//);
    });

    it.each(["gzip", "br", "deflate"])("decodes %s bodies", async (encoding) => {
      const res = await safeFetch(`${flaky.baseUrl}/_/${encoding}`);
      expect(res.headers["content-encoding"]).toBe(encoding);
      expect(res.body.toString()).toContain("<title>Encoded /_/");
    });

    it("follows relative and absolute redirects and reports where it ended", async () => {
      const hop2 = `/_/redirect?to=${encodeURIComponent(`${flaky.baseUrl}/_/echo-headers`)}&status=301`;
      const res = await safeFetch(`${flaky.baseUrl}/_/redirect?to=${encodeURIComponent(hop2)}&status=307`);
      expect(res.url).toBe(`${flaky.baseUrl}/_/echo-headers`);
    });

    it("follows 5 redirects and gives up on the 6th", async () => {
      const chain = (n: number) => {
        let url = "/_/echo-headers";
        for (let i = 0; i < n; i++) url = `/_/redirect?to=${encodeURIComponent(url)}`;
        return flaky.baseUrl + url;
      };
      await expect(safeFetch(chain(5))).resolves.toMatchObject({ url: `${flaky.baseUrl}/_/echo-headers` });
      expect((await fetchError(safeFetch(chain(6)))).kind).toBe("too-many-redirects");
    });

    it("keeps Authorization on same-origin redirects and drops it across origins", async () => {
      const headers = { authorization: "Bearer secret", cookie: "a=b" };
      const same = await safeFetch(`${flaky.baseUrl}/_/redirect?to=/_/echo-headers`, { headers });
      expect(JSON.parse(same.body.toString()).authorization).toBe("Bearer secret");
      const cross = await safeFetch(`${flaky.baseUrl}/_/redirect?to=${encodeURIComponent(`${other.baseUrl}/_/echo-headers`)}`, { headers });
      const seen = JSON.parse(cross.body.toString());
      expect(seen.authorization).toBeUndefined();
      expect(seen.cookie).toBeUndefined();
      // Once dropped they stay dropped, even when a later hop comes back to the first origin.
      const back = `${other.baseUrl}/_/redirect?to=${encodeURIComponent(`${flaky.baseUrl}/_/echo-headers`)}`;
      const returned = await safeFetch(`${flaky.baseUrl}/_/redirect?to=${encodeURIComponent(back)}`, { headers });
      expect(JSON.parse(returned.body.toString()).authorization).toBeUndefined();
    });

    it("refuses unsupported schemes and non-URLs", async () => {
      expect((await fetchError(safeFetch("file:///etc/passwd"))).kind).toBe("bad-url");
      expect((await fetchError(safeFetch("ftp://127.0.0.1/x"))).kind).toBe("bad-url");
      expect((await fetchError(safeFetch("not a url"))).kind).toBe("bad-url");
    });
  });

  describe("limits", () => {
    it("times out a page that does not answer", async () => {
      const started = Date.now();
      const err = await fetchError(safeFetch(`${flaky.baseUrl}/_/hang`, { timeoutMs: 300, retries: 0 }));
      expect(err.kind).toBe("timeout");
      expect(Date.now() - started).toBeLessThan(2_000);
    });

    it("refuses bodies over maxBytes: declared, streamed, and decompressed (gzip bomb)", async () => {
      for (const path of ["/_/large?kb=2048", "/_/large-chunked?kb=2048", "/_/bomb"]) {
        expect((await fetchError(safeFetch(flaky.baseUrl + path, { maxBytes: 1024 * 1024 }))).kind).toBe("too-large");
      }
      await expect(safeFetch(`${flaky.baseUrl}/_/large?kb=512`, { maxBytes: 1024 * 1024 })).resolves.toMatchObject({ status: 200 });
    });

    it("checks the content type against what the caller accepts", async () => {
      const err = await fetchError(safeFetch(`${flaky.baseUrl}/_/type?ct=application/zip`, { accept: ["text/html", "text/*"] }));
      expect(err.kind).toBe("bad-content-type");
      const res = await safeFetch(`${flaky.baseUrl}/_/type?ct=${encodeURIComponent("text/plain; charset=utf-8")}`, { accept: ["text/*"] });
      expect(res.contentType).toBe("text/plain");
    });

    it("reports other non-2xx answers as http-status without retrying them", async () => {
      const err = await fetchError(safeFetch(`${flaky.baseUrl}/nope`, quick));
      expect([err.kind, err.status]).toEqual(["http-status", 404]);
      expect(flaky.stats["/nope"]).toBe(1);
    });
  });

  describe("retries", () => {
    it("retries a 500 and a twice-503 page until it answers", async () => {
      await expect(safeFetch(`${flaky.baseUrl}/500-once/a`, quick)).resolves.toMatchObject({ status: 200 });
      await expect(safeFetch(`${flaky.baseUrl}/503-twice/a`, quick)).resolves.toMatchObject({ status: 200 });
      expect([flaky.stats["/500-once/a"], flaky.stats["/503-twice/a"]]).toEqual([2, 3]);
    });

    it("waits as long as Retry-After says on 429, in seconds or as a date", async () => {
      for (const path of ["/429-once/a", "/429-date/a"]) {
        const started = Date.now();
        await expect(safeFetch(flaky.baseUrl + path, quick)).resolves.toMatchObject({ status: 200 });
        expect(Date.now() - started).toBeGreaterThanOrEqual(path.includes("date") ? 0 : 950);
        expect(flaky.stats[path]).toBe(2);
      }
    });

    it("does not wait for a Retry-After beyond the cap, and says how long the server asked for", async () => {
      const err = await fetchError(safeFetch(`${flaky.baseUrl}/429-forever`, quick));
      expect([err.kind, err.status, err.details.retryAfterMs]).toEqual(["http-status", 429, 3_600_000]);
      expect(flaky.stats["/429-forever"]).toBe(1);
    });

    it("stops after the bounded number of attempts", async () => {
      const err = await fetchError(safeFetch(`${flaky.baseUrl}/always-500`, { ...quick, retries: 2 }));
      expect([err.kind, err.status]).toEqual(["http-status", 500]);
      expect(flaky.stats["/always-500"]).toBe(3);
    });

    it("retries a dropped connection, and a body the connection cut short", async () => {
      await expect(safeFetch(`${flaky.baseUrl}/reset-once/a`, quick)).resolves.toMatchObject({ status: 200 });
      expect(flaky.stats["/reset-once/a"]).toBe(2);
      await expect(safeFetch(`${flaky.baseUrl}/cut-once/a`, quick)).resolves.toMatchObject({ status: 200 });
      expect(flaky.stats["/cut-once/a"]).toBe(2);
    });
  });

  describe("HostLimiter", () => {
    it("caps concurrent requests per host", async () => {
      const limiter = new HostLimiter(2);
      const started = Date.now();
      await Promise.all(Array.from({ length: 6 }, (_, i) => safeFetch(`${flaky.baseUrl}/slow/${i}?ms=150`, { limiter })));
      expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 150 - 20);
    });

    it("hands slots over in order and keeps hosts apart", async () => {
      const limiter = new HostLimiter(1);
      const order: string[] = [];
      const task = async (host: string, name: string) => {
        const release = await limiter.acquire(host);
        order.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, 10));
        order.push(`end ${name}`);
        release();
        release(); // a second release is harmless
      };
      await Promise.all([task("a", "a1"), task("a", "a2"), task("b", "b1")]);
      expect(order.indexOf("start a2")).toBeGreaterThan(order.indexOf("end a1"));
      expect(order.indexOf("start b1")).toBeLessThan(order.indexOf("end a1"));
    });
  });

  describe("SSRF guard", () => {
    it("refuses loopback unless ALLOW_LOOPBACK_TARGETS=true (and by default), whatever the spelling", async () => {
      const port = new URL(flaky.baseUrl).port;
      const before = Object.values(flaky.stats).reduce((a, b) => a + b, 0);
      for (const policy of [PUBLIC_ONLY, undefined]) {
        for (const host of ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1", "0.0.0.0"]) {
          const err = await fetchError(guardedFetch(`http://${host}:${port}/_/echo-headers`, { retries: 0, policy }));
          expect(err.kind).toBe("blocked-address");
        }
      }
      const misspelt = addressPolicy({ ALLOW_LOOPBACK_TARGETS: "yes" });
      expect((await fetchError(safeFetch(`${flaky.baseUrl}/_/echo-headers`, { policy: misspelt }))).kind).toBe("blocked-address");
      expect(Object.values(flaky.stats).reduce((a, b) => a + b, 0)).toBe(before); // nothing reached the server
      await expect(safeFetch(`http://localhost:${port}/_/echo-headers`)).resolves.toMatchObject({ status: 200 });
    });

    it("refuses private, link-local, metadata and unspecified addresses even with loopback allowed", async () => {
      for (const target of [
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0/",
      ]) {
        const err = await fetchError(safeFetch(target, { retries: 0, timeoutMs: 1_000 }));
        expect([target, err.kind]).toEqual([target, "blocked-address"]);
      }
    });

    it("checks every redirect hop: an allowed host cannot bounce us to a blocked address", async () => {
      const port = new URL(flaky.baseUrl).port;
      for (const to of ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/admin", `http://0.0.0.0:${port}/_/echo-headers`]) {
        const err = await fetchError(safeFetch(`${flaky.baseUrl}/_/redirect?to=${encodeURIComponent(to)}`, { retries: 0, timeoutMs: 1_000 }));
        expect([to, err.kind]).toEqual([to, "blocked-address"]);
      }
    });

    it("checks the addresses a name resolves to, and connects to the address it checked", async () => {
      const port = new URL(flaky.baseUrl).port;
      const toPrivate = async () => [{ address: "10.0.0.7", family: 4 }];
      const mixed = async () => [{ address: "127.0.0.1", family: 4 }, { address: "192.168.0.9", family: 4 }];
      const toLoopback = async () => [{ address: "127.0.0.1", family: 4 }];
      expect((await fetchError(safeFetch(`http://intranet.test:${port}/`, { resolver: toPrivate, retries: 0 }))).kind).toBe("blocked-address");
      expect((await fetchError(safeFetch(`http://mixed.test:${port}/`, { resolver: mixed, retries: 0 }))).kind).toBe("blocked-address");
      const res = await safeFetch(`http://fixture.test:${port}/_/echo-headers`, { resolver: toLoopback });
      expect(JSON.parse(res.body.toString()).host).toBe(`fixture.test:${port}`);
    });
  });
});
