import type { IncomingMessage } from "node:http";
import { ErrorType, validationItems, type FieldProblem, type ValidationItem } from "./errors";

export interface RenderedError {
  status: number;
  body: Record<string, unknown>;
  /** Response headers the error carries (Retry-After of a 429, Allow of a 405). */
  headers?: Record<string, string>;
}

/** Error data fields that are answered as headers rather than in the body. */
const HEADER_FIELDS: Record<string, string> = { retry_after: "Retry-After", allow: "Allow" };

type RequestLike = Pick<IncomingMessage, "method"> & {
  query?: Record<string, unknown>;
  body?: unknown;
  $alias?: { path?: string };
};

interface ErrorLike {
  name?: string;
  message?: string;
  code?: unknown;
  status?: unknown;
  type?: string;
  data?: unknown;
}

/** Where a field came from: the query string, the path, or (for writes) the body. */
export function locateField(field: string, req: RequestLike): string {
  const root = field.split(/[.[]/)[0] ?? field;
  if (req.query && Object.hasOwn(req.query, root)) return "query";
  if (req.body && typeof req.body === "object" && Object.hasOwn(req.body, root)) return "body";
  if (req.$alias?.path?.includes(`:${root}`)) return "path";
  return req.method === "GET" || req.method === "DELETE" || req.method === "HEAD" ? "query" : "body";
}

/** fastest-validator problems (and our own FieldProblems) as HTTPValidationError items. */
export function toValidationItems(problems: FieldProblem[], req: RequestLike): ValidationItem[] {
  return validationItems(problems, (field) => locateField(field, req));
}

/** Errors whose cause is the platform being partly unavailable, not the caller. */
const UNAVAILABLE = new Set(["ServiceNotFoundError", "ServiceNotAvailableError", "QueueIsFullError"]);

/**
 * The one place an error becomes an HTTP response. Client errors keep their status and message as
 * `{detail}` (plus any extra data fields, e.g. collected_count); validation errors become
 * `{detail: [{loc, msg, type}]}`; anything else is a 500 that reveals nothing.
 */
export function renderError(err: ErrorLike, req: RequestLike): RenderedError {
  if (err.name && UNAVAILABLE.has(err.name)) return { status: 503, body: { detail: "Service temporarily unavailable" } };
  if (err.name === "RequestTimeoutError") return { status: 504, body: { detail: "Upstream service timed out" } };

  const status = typeof err.code === "number" ? err.code : typeof err.status === "number" ? err.status : 500;
  if (status === 422 && Array.isArray(err.data)) {
    return { status, body: { detail: toValidationItems(err.data as FieldProblem[], req) } };
  }
  if (status >= 400 && status < 500) {
    const extra: Record<string, unknown> = err.data && typeof err.data === "object" && !Array.isArray(err.data) ? { ...err.data } : {};
    const headers: Record<string, string> = {};
    for (const [field, header] of Object.entries(HEADER_FIELDS)) {
      if (extra[field] === undefined) continue;
      headers[header] = String(extra[field]);
      delete extra[field];
    }
    return { status, body: { ...extra, detail: clientMessage(err, status) }, ...(Object.keys(headers).length ? { headers } : {}) };
  }
  if (err.type === ErrorType.CONVERSION_FAILED) return { status: 500, body: { detail: err.message } };
  return { status: 500, body: { detail: "Internal Server Error" } };
}

/** Body-parser and router errors carry technical messages; give callers a plain one. */
function clientMessage(err: ErrorLike, status: number): string {
  if (err.type === "entity.parse.failed") return "Malformed JSON in request body";
  // Our own 413s (ERRORS.payloadTooLarge: an upload past its limits) say which limit.
  if (err.type === "entity.too.large" || (status === 413 && err.type !== ErrorType.PAYLOAD_TOO_LARGE)) return "Request body too large";
  if (err.name === "NotFoundError" && err.type === "NOT_FOUND") return "Not Found";
  return err.message || "Bad Request";
}
