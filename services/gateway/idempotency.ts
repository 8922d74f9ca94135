import { createHash } from "node:crypto";
import { Schema, type Connection, type Model } from "mongoose";
import { ERRORS } from "../../lib/errors";
import type { RequestMeta } from "../../lib/meta";
import type { SecretBox } from "../../lib/secrets";
import { crossAccount } from "../../lib/tenancy-guard";

/**
 * Idempotency-Key on POST, with Stripe's semantics (docs/adr/0037-unknown-fields-idempotency-key-readme.md): the first answer to a
 * key is kept 24 hours and replayed to a retry with the same request; the same key with another request is a 422,
 * and a retry while the first is still running a 409. Kept in the database, so every gateway replica sees it.
 */

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "Idempotent-Replayed";
/** How long a key and its answer are kept (Stripe: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** Stripe's limit on a key's length. */
export const MAX_KEY_LENGTH = 255;
/**
 * How long a request holds its key: longer than any request runs (the broker's request timeout is 30 s), so only
 * a gateway that died mid-request leaves a key held this long, and a retry then takes it over.
 */
export const IDEMPOTENCY_LOCK_MS = 120_000;

/** An answer as replayed: status, Location (creates), body (JSON text, sealed in the store: it may hold a secret). */
export interface StoredAnswer {
  status: number;
  location?: string;
  body?: string;
}

interface IdempotencyRecord {
  /** Hash of the caller's scope and the key: keys are only ever compared within one account and credential. */
  _id: string;
  account_id: number;
  /** Hash of the request: method, path, query and body (keys sorted). */
  fingerprint: string;
  state: "running" | "done";
  locked_until: Date;
  answer: StoredAnswer | null;
  /** A TTL index deletes the record after this (ensureExpiry); reads treat a passed one as gone. */
  expires_at: Date;
}

const answerSchema = new Schema<StoredAnswer>({ status: Number, location: String, body: String }, { _id: false });
const recordSchema = new Schema<IdempotencyRecord>(
  {
    _id: { type: String, required: true },
    account_id: { type: Number, required: true },
    fingerprint: { type: String, required: true },
    state: { type: String, required: true, enum: ["running", "done"] },
    locked_until: { type: Date, required: true },
    answer: { type: answerSchema, default: null },
    expires_at: { type: Date, required: true },
  },
  { collection: "idempotency_keys", versionKey: false },
);

export function idempotencyModel(db: Connection): Model<IdempotencyRecord> {
  return (db.models.IdempotencyKey as Model<IdempotencyRecord>) ?? db.model<IdempotencyRecord>("IdempotencyKey", recordSchema);
}

/** One request's claim on a key. */
export interface KeyClaim {
  id: string;
  accountId: number;
  fingerprint: string;
}

/** The server error code of an option it does not implement. */
const NOT_IMPLEMENTED = 238;

const sha256 = (text: string) => createHash("sha256").update(text).digest("base64url");

/** JSON with object keys sorted, so two bodies that differ only in key order are the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.keys(value as object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Who a key belongs to: the account and the credential (user, API key, or the master key), as Stripe scopes keys. */
function scopeOf(meta: RequestMeta): string | null {
  if (typeof meta.accountId !== "number") return null;
  const credential = meta.authType === "api_key" ? `key:${meta.apiKeyId}` : meta.authType === "master" ? "master" : `user:${meta.userId}`;
  return `${meta.accountId}/${credential}`;
}

/**
 * The claim a POST makes with its Idempotency-Key header, or null without one (or without credentials: an
 * anonymous key would be shared by everyone who guesses it). A key longer than 255 characters is a 422.
 */
export function keyClaim(
  key: string | string[] | undefined,
  meta: RequestMeta,
  request: { method: string; path: string; query: unknown; body: unknown },
): KeyClaim | null {
  if (key === undefined) return null;
  const text = Array.isArray(key) ? key.join(",") : key;
  const scope = scopeOf(meta);
  if (!scope) return null;
  if (!text || text.length > MAX_KEY_LENGTH) {
    throw ERRORS.validation([{ field: "Idempotency-Key", location: "header", message: `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters`, type: "string" }]);
  }
  return {
    id: sha256(`${scope}\n${text}`),
    accountId: meta.accountId!,
    fingerprint: sha256(`${request.method} ${request.path}\n${canonicalJson(request.query ?? {})}\n${canonicalJson(request.body ?? null)}`),
  };
}

/** What a claimed key says to do: run the request, or answer as the first request was answered. */
export type KeyOutcome = { run: true } | { run: false; answer: StoredAnswer };

/** The store of keys: claim before running, then keep the answer (or let the key go when nothing ran). */
export class IdempotencyStore {
  constructor(
    private readonly records: Model<IdempotencyRecord>,
    private readonly box: SecretBox,
  ) {}

  /** Claims the key for this request, or says how to answer instead; throws 422 (another request) and 409 (running). */
  async claim(claim: KeyClaim, now = new Date()): Promise<KeyOutcome> {
    const fresh = { fingerprint: claim.fingerprint, state: "running" as const, locked_until: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS), answer: null, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) };
    try {
      await this.records.create({ _id: claim.id, account_id: claim.accountId, ...fresh });
      return { run: true };
    } catch (err) {
      if ((err as { code?: number }).code !== 11000) throw err;
    }
    const existing = await this.records.findOne({ _id: claim.id, account_id: claim.accountId }).lean<IdempotencyRecord>();
    // Expired (not yet deleted), or a request that died holding the key: taken over as a new claim, if no other retry was first.
    const stale = existing && (existing.expires_at <= now || (existing.state === "running" && existing.locked_until <= now));
    if (!existing || stale) {
      const taken = await this.records.updateOne(
        { _id: claim.id, account_id: claim.accountId, ...(existing ? { locked_until: existing.locked_until, expires_at: existing.expires_at } : {}) },
        { $set: fresh },
        { upsert: !existing },
      ).catch((err) => ((err as { code?: number }).code === 11000 ? { modifiedCount: 0, upsertedCount: 0 } : Promise.reject(err)));
      if (taken.modifiedCount + taken.upsertedCount === 1) return { run: true };
      throw ERRORS.conflict("A request with this Idempotency-Key is in progress; retry once it has finished");
    }
    if (existing.fingerprint !== claim.fingerprint) {
      throw ERRORS.validation([
        {
          field: "Idempotency-Key",
          location: "header",
          message: "This Idempotency-Key was already used with a different request (method, path or body); use a new key",
          type: "idempotency_key_reused",
        },
      ]);
    }
    if (existing.state === "running") throw ERRORS.conflict("A request with this Idempotency-Key is in progress; retry once it has finished");
    const answer = existing.answer!;
    return { run: false, answer: { ...answer, ...(answer.body !== undefined ? { body: this.opened(answer.body) } : {}) } };
  }

  /** A kept body, opened; sealed under a secrets key since changed, it cannot be replayed (nor safely run again). */
  private opened(sealed: string): string {
    try {
      return this.box.open(sealed);
    } catch {
      throw ERRORS.conflict("The first answer to this Idempotency-Key can no longer be read (the secrets key changed); use a new key");
    }
  }

  /** Keeps the answer for replays. */
  async keep(claim: KeyClaim, answer: StoredAnswer): Promise<void> {
    const sealed = { ...answer, ...(answer.body !== undefined ? { body: this.box.seal(answer.body) } : {}) };
    await this.records.updateOne({ _id: claim.id, account_id: claim.accountId, state: "running" }, { $set: { state: "done", answer: sealed } });
  }

  /** Lets the key go: the request wrote nothing, so a retry (even with a corrected body) runs afresh. */
  async release(claim: KeyClaim): Promise<void> {
    await this.records.deleteOne({ _id: claim.id, account_id: claim.accountId, state: "running" });
  }

  /**
   * The TTL index that deletes expired keys; true when the server has it. The bundled server refuses TTL indexes
   * (NotImplemented): it gets a plain index, and `prune` sweeps instead.
   */
  async ensureExpiry(): Promise<boolean> {
    try {
      await this.records.collection.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code !== NOT_IMPLEMENTED) throw err;
      await this.records.collection.createIndex({ expires_at: 1 });
      return false;
    }
  }

  /** Deletes expired keys (where the server has no TTL index). */
  async prune(now = new Date()): Promise<void> {
    await crossAccount("expired idempotency keys of every account", this.records.deleteMany({ expires_at: { $lte: now } }));
  }
}
