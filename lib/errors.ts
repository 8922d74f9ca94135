import { Errors } from "moleculer";

/** Stable error type strings: they travel over the transporter and tests pin them. */
export const ErrorType = {
  BAD_REQUEST: "BAD_REQUEST",
  UNAUTHORIZED: "UNAUTHORIZED",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  VALIDATION: "VALIDATION_ERROR",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  METHOD_NOT_ALLOWED: "METHOD_NOT_ALLOWED",
  TOO_MANY_REQUESTS: "TOO_MANY_REQUESTS",
  CONVERSION_FAILED: "CONVERSION_FAILED",
} as const;

/** One validation problem in fastest-validator's shape, so our own checks and the validator's read alike. */
export interface FieldProblem {
  field: string;
  message: string;
  type: string;
  /** Where the field came from when the caller knows better than the gateway (body, query, path, header). */
  location?: string;
}

/**
 * MoleculerClientError is rebuilt by name on the calling node, so these keep their code, type and data
 * across NATS. One HTTP status per factory; only the gateway turns them into response bodies.
 */
function clientError(message: string, code: number, type: string, data?: unknown): Errors.MoleculerClientError {
  return new Errors.MoleculerClientError(message, code, type, data);
}

export const ERRORS = {
  badRequest: (message: string, data?: unknown) => clientError(message, 400, ErrorType.BAD_REQUEST, data),
  unauthorized: (message = "Not authenticated") => clientError(message, 401, ErrorType.UNAUTHORIZED),
  forbidden: (message = "Not enough permissions") => clientError(message, 403, ErrorType.FORBIDDEN),
  notFound: (what: string, id?: unknown) =>
    clientError(id === undefined ? `${what} not found` : `${what} ${String(id)} not found`, 404, ErrorType.NOT_FOUND),
  /** A request (an uploaded file, a document's text) past a configured size limit. */
  payloadTooLarge: (message: string, data?: unknown) => clientError(message, 413, ErrorType.PAYLOAD_TOO_LARGE, data),
  conflict: (message: string, data?: unknown) => clientError(message, 409, ErrorType.CONFLICT, data),
  /** The gateway answers it with an Allow header listing `allow`. */
  methodNotAllowed: (allow: string[]) =>
    clientError("Method Not Allowed", 405, ErrorType.METHOD_NOT_ALLOWED, { allow: allow.join(", ") }),
  /** Too many failed attempts; the gateway sends `retry_after` (seconds) as a Retry-After header too. */
  tooManyRequests: (message: string, retryAfterSeconds: number) =>
    clientError(message, 429, ErrorType.TOO_MANY_REQUESTS, { retry_after: retryAfterSeconds }),
  /** The one 500 the interface names (pull could not express a team as a configuration); its message is shown. */
  conversionFailed: (message: string) => new Errors.MoleculerServerError(message, 500, ErrorType.CONVERSION_FAILED),
  /** A 400 that lists every problem found, for documents validated as a whole (team push). */
  invalidDocument: (message: string, problems: FieldProblem[]) =>
    clientError(message, 400, ErrorType.BAD_REQUEST, { errors: validationItems(problems, () => "body") }),
  /** Same class and type as the params validator's errors, so the gateway renders both one way. */
  validation: (problems: FieldProblem[]) =>
    new Errors.ValidationError("Parameters validation error!", ErrorType.VALIDATION, problems),
};

/** One item of the HTTPValidationError body: where, what, which rule. */
export interface ValidationItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** "items[2].title" at "body" becomes ["body", "items", 2, "title"]. */
export function fieldLoc(field: string, location: string): (string | number)[] {
  const parts = field
    .replace(/\[(\d+)\]/g, ".$1")
    .split(".")
    .filter(Boolean)
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  return [location, ...parts];
}

/** Problems as HTTPValidationError items; `locate` picks the location of problems that do not name one. */
export function validationItems(problems: FieldProblem[], locate: (field: string) => string): ValidationItem[] {
  return problems.map((p) => ({ loc: fieldLoc(p.field ?? "", p.location ?? locate(p.field ?? "")), msg: p.message, type: p.type }));
}

/** The per-document errors of a bulk write that failed (index into its documents), none for any other failure. */
export function writeErrorsOf(err: unknown): { index: number; code: number; errmsg?: string }[] {
  const writeErrors = (err as { writeErrors?: unknown } | null)?.writeErrors;
  return (Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : []) as { index: number; code: number; errmsg?: string }[];
}

/** True for MongoDB duplicate-key errors (a unique index refused a write). */
export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: number }).code === 11000;
}
