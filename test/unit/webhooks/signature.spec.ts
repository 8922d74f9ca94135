import { createHmac, randomBytes } from "node:crypto";
import { newSecret, secretKey, sign, verify, WebhookVerificationError } from "../../../services/webhooks/signature";

/** The expected signature, computed from the spec's definition and node:crypto alone. */
function expectedSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
}

describe("webhook signatures (Standard Webhooks v1)", () => {
  const secret = "whsec_" + randomBytes(32).toString("base64");
  const id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  const body = '{"type":"agent.created","timestamp":"2026-11-23T08:00:00.000Z","data":{"id":1}}';
  const now = 1_795_000_000_000;
  const timestamp = Math.floor(now / 1000);
  const headers = (signature: string, ts = timestamp) => ({ "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature });

  it("signs {id}.{timestamp}.{body} with HMAC-SHA256 keyed by the base64-decoded secret", () => {
    expect(sign(secret, id, timestamp, body)).toBe(expectedSignature(secret, id, timestamp, body));
  });

  it("uses the same key with or without the whsec_ prefix", () => {
    const bare = secret.slice("whsec_".length);
    expect(sign(bare, id, timestamp, body)).toBe(sign(secret, id, timestamp, body));
    expect(secretKey(secret)).toEqual(Buffer.from(bare, "base64"));
  });

  it("signs raw bytes exactly as the equivalent string", () => {
    expect(sign(secret, id, timestamp, Buffer.from(body))).toBe(sign(secret, id, timestamp, body));
  });

  it("new secrets are whsec_ plus base64 of 32 random bytes, different every time", () => {
    const a = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(secretKey(a)).toHaveLength(32);
    expect(newSecret()).not.toBe(a);
  });

  it("verifies a correctly signed delivery", () => {
    expect(() => verify(secret, headers(expectedSignature(secret, id, timestamp, body)), body, 300, now)).not.toThrow();
  });

  it("reads header names case-insensitively and verifies Buffer bodies", () => {
    const mixed = { "Webhook-Id": id, "WEBHOOK-TIMESTAMP": String(timestamp), "Webhook-Signature": expectedSignature(secret, id, timestamp, body) };
    expect(() => verify(secret, mixed, Buffer.from(body), 300, now)).not.toThrow();
  });

  it("refuses a changed body", () => {
    const signature = expectedSignature(secret, id, timestamp, body);
    expect(() => verify(secret, headers(signature), body.replace('"id":1', '"id":2'), 300, now)).toThrow(WebhookVerificationError);
    expect(() => verify(secret, headers(signature), body + " ", 300, now)).toThrow("no matching signature");
  });

  it("refuses a wrong secret", () => {
    const other = "whsec_" + randomBytes(32).toString("base64");
    expect(() => verify(secret, headers(expectedSignature(other, id, timestamp, body)), body, 300, now)).toThrow("no matching signature");
  });

  it("refuses a signature made for another webhook-id", () => {
    expect(() => verify(secret, headers(expectedSignature(secret, "msg_other", timestamp, body)), body, 300, now)).toThrow(WebhookVerificationError);
  });

  it("accepts any one of several space-separated signatures, ignoring other versions", () => {
    const wrong = expectedSignature("whsec_" + randomBytes(32).toString("base64"), id, timestamp, body);
    const right = expectedSignature(secret, id, timestamp, body);
    const list = `v1a,${randomBytes(64).toString("base64")} ${wrong} ${right}`;
    expect(() => verify(secret, headers(list), body, 300, now)).not.toThrow();
    expect(() => verify(secret, headers(`${wrong} v2,${right.slice(3)}`), body, 300, now)).toThrow("no matching signature");
  });

  it("refuses timestamps outside the tolerance window, either way, and accepts the edge", () => {
    const at = (ts: number) => headers(expectedSignature(secret, id, ts, body), ts);
    expect(() => verify(secret, at(timestamp - 301), body, 300, now)).toThrow("tolerance");
    expect(() => verify(secret, at(timestamp + 301), body, 300, now)).toThrow("tolerance");
    expect(() => verify(secret, at(timestamp - 300), body, 300, now)).not.toThrow();
    // The default tolerance is five minutes.
    expect(() => verify(secret, at(timestamp - 299), body, undefined, now)).not.toThrow();
    expect(() => verify(secret, at(timestamp - 400), body, undefined, now)).toThrow("tolerance");
  });

  it("refuses missing headers and a non-numeric timestamp", () => {
    const signature = expectedSignature(secret, id, timestamp, body);
    expect(() => verify(secret, { "webhook-timestamp": String(timestamp), "webhook-signature": signature }, body, 300, now)).toThrow("missing webhook-id");
    expect(() => verify(secret, { ...headers(signature), "webhook-signature": undefined }, body, 300, now)).toThrow("missing webhook-signature");
    expect(() => verify(secret, headers(signature, "17e8" as unknown as number), body, 300, now)).toThrow("invalid webhook-timestamp");
  });
});
