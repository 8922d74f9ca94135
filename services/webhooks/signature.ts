import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** How far a webhook-timestamp may be from the receiver's clock (Standard Webhooks' libraries use 5 minutes). */
export const WEBHOOK_TOLERANCE_IN_SECONDS = 5 * 60;
/** Random bytes in a new secret: Standard Webhooks asks for 24 to 64; 32 is a full SHA-256 block's worth of key. */
export const SECRET_BYTES = 32;
const SECRET_PREFIX = "whsec_";
const SIGNATURE_VERSION = "v1";

/** Why a delivery did not verify; receivers answer such a delivery with 401. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

/** The three Standard Webhooks headers; lookups are case-insensitive. */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

/** A new signing secret as shown to the customer: "whsec_" + base64 of random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

/** The HMAC key a secret stands for: the base64 after the optional "whsec_" prefix. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

/** "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>" */
export function sign(secret: string, id: string, timestamp: number, rawBody: string | Buffer): string {
  const mac = createHmac("sha256", secretKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest("base64");
  return `${SIGNATURE_VERSION},${mac}`;
}

function header(headers: WebhookHeaders, name: string): string {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) throw new WebhookVerificationError(`missing ${name} header`);
  return text;
}

/** Constant-time comparison of two strings; different lengths are unequal without comparing content. */
function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Checks a delivery against the raw bytes received: the timestamp must be within `toleranceSeconds` of
 * `nowMs`, and one of the space-separated v1 signatures must match. Throws WebhookVerificationError.
 */
export function verify(
  secret: string,
  headers: WebhookHeaders,
  rawBody: string | Buffer,
  toleranceSeconds = WEBHOOK_TOLERANCE_IN_SECONDS,
  nowMs = Date.now(),
): void {
  const id = header(headers, "webhook-id");
  const timestampText = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!/^\d+$/.test(timestampText)) throw new WebhookVerificationError("invalid webhook-timestamp header");
  const timestamp = Number(timestampText);
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceSeconds) throw new WebhookVerificationError("webhook-timestamp is outside the tolerance window");
  const expected = sign(secret, id, timestamp, rawBody);
  const matches = signatures
    .split(" ")
    .filter((entry) => entry.startsWith(`${SIGNATURE_VERSION},`))
    .some((entry) => sameText(entry, expected));
  if (!matches) throw new WebhookVerificationError("no matching signature");
}
