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
  conflict: (message: string, data?: unknown) => clientError(message, 409, ErrorType.CONFLICT, data),
  /** Same class and type as the params validator's errors, so the gateway renders both one way. */
  validation: (problems: FieldProblem[]) =>
    new Errors.ValidationError("Parameters validation error!", ErrorType.VALIDATION, problems),
};

/** True for MongoDB duplicate-key errors (a unique index refused a write). */
export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: number }).code === 11000;
}
