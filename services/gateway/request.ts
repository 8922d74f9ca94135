import { isUtf8 } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
import bodyParser from "body-parser";
import { Errors } from "moleculer";
import type { FieldProblem } from "../../lib/errors";
import { jsonProblem, jsonProblemMessage, MAX_BODY_DEPTH } from "../../lib/free-json";

/** First language tag of an Accept-Language header ("de-DE,de;q=0.9" gives "de-DE"); undefined when absent or "*". */
export function preferredLocale(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const ranked = header
    .split(",")
    .map((part) => {
      const [tag, ...params] = part.trim().split(";");
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return { tag: (tag ?? "").trim(), q: q ? Number(q.slice(2)) : 1 };
    })
    .filter(({ tag, q }) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(tag) && q > 0)
    .sort((a, b) => b.q - a.q);
  return ranked[0]?.tag;
}

/**
 * The client's address for throttling: the socket's peer, or, behind `trustedProxies` proxies of our own, the
 * X-Forwarded-For entry the outermost of them appended (entries further left are whatever the client sent).
 */
export function clientAddress(req: Pick<IncomingMessage, "headers" | "socket">, trustedProxies: number): string {
  const peer = req.socket.remoteAddress ?? "unknown";
  if (trustedProxies <= 0) return peer;
  const forwarded = String(req.headers["x-forwarded-for"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return forwarded[forwarded.length - trustedProxies] ?? peer;
}

type Next = (err?: unknown) => void;

/**
 * The JSON body parser of the API routes (gzip, deflate and br bodies are decoded). Its errors keep their HTTP
 * status: moleculer-web would take zlib's string code ("Z_DATA_ERROR") for a bad gzip body and answer 500.
 * A body of another media type is a 415, as on the MCP route: body-parser would skip it, and the action would
 * report its fields missing although they were sent.
 */
export function jsonBodyParser(limit: string, uploadLimitBytes = 10 * 1024 * 1024) {
  const parse = bodyParser.json({ strict: false, limit, type: isJsonBody, verify: refuseInvalidUtf8 });
  return (req: IncomingMessage, res: ServerResponse, next: Next) => {
    if (carriesBody(req) && isMultipartBody(req) && acceptsUpload(req)) {
      if ((req.headers["content-encoding"] ?? "identity").trim().toLowerCase() !== "identity") {
        return next(new Errors.MoleculerClientError("A multipart upload is sent without Content-Encoding", 415, "encoding.unsupported"));
      }
      multipartBody(req, uploadLimitBytes).then(
        (body) => {
          (req as IncomingMessage & { body?: unknown }).body = body;
          next();
        },
        (err: unknown) => next(err),
      );
      return;
    }
    if (carriesBody(req) && !isJsonBody(req)) {
      return next(new Errors.MoleculerClientError("Request body must be JSON (Content-Type: application/json)", 415, "UNSUPPORTED_MEDIA_TYPE"));
    }
    const unsupported = unsupportedEncoding(req);
    if (carriesBody(req) && unsupported) {
      // RFC 7694: a 415 for a content coding says which codings are accepted.
      res.setHeader("Accept-Encoding", DECODED_ENCODINGS.join(", "));
      return next(new Errors.MoleculerClientError(`Unsupported Content-Encoding "${unsupported}": send the body as is, or with gzip, deflate or br`, 415, "encoding.unsupported"));
    }
    parse(req, res, (err?: unknown) => next(err ? bodyError(err) : undefined));
  };
}

/** Content codings the API decodes: a fixed list, not whatever the runtime's zlib can (Node 24's body-parser also takes zstd). */
const DECODED_ENCODINGS = ["gzip", "deflate", "br"];

/** The first coding of the request's Content-Encoding the API does not decode, or null. */
function unsupportedEncoding(req: IncomingMessage): string | null {
  const codings = (req.headers["content-encoding"] ?? "").split(",").map((c) => c.trim().toLowerCase());
  return codings.find((c) => c && c !== "identity" && !DECODED_ENCODINGS.includes(c)) ?? null;
}

/** application/json, or a JSON-based type (RFC 6839 `+json` suffix), with any parameters. */
function isJsonBody(req: IncomingMessage): boolean {
  const media = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  return media === "application/json" || /^application\/[\w.-]+\+json$/.test(media);
}

/** Routes that take a multipart/form-data upload: adding or replacing a document of an upload source. */
const UPLOAD_PATH = /\/knowledge\/[^/?]+\/documents(\/[^/?]+)?\/?(\?.*)?$/;

function acceptsUpload(req: IncomingMessage): boolean {
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? "";
  return (req.method === "POST" || req.method === "PUT") && UPLOAD_PATH.test(url);
}

function isMultipartBody(req: IncomingMessage): boolean {
  return (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase() === "multipart/form-data";
}

/** Room for the form's other fields and the part headers beside the file. */
const MULTIPART_OVERHEAD_BYTES = 1024 * 1024;

/**
 * A multipart/form-data upload as the JSON body the action validates: the `file` part becomes
 * `{filename, content_type, data}` (data in base64, as a JSON client would send it), `metadata` is read as JSON,
 * other text fields stay strings. Parsed by the runtime's own multipart reader (undici's, behind Response.formData);
 * past the upload limit it stops reading and answers 413, a body that is not multipart is a 400.
 */
async function multipartBody(req: IncomingMessage, limitBytes: number): Promise<Record<string, unknown>> {
  const max = limitBytes + MULTIPART_OVERHEAD_BYTES;
  const declared = Number(req.headers["content-length"] ?? NaN);
  const tooLarge = () =>
    new Errors.MoleculerClientError(`Upload larger than the limit of ${limitBytes} bytes`, 413, "PAYLOAD_TOO_LARGE", { limit_bytes: limitBytes });
  if (declared > max) {
    req.resume();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) {
      req.resume();
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  let form: FormData;
  try {
    form = await new Response(Buffer.concat(chunks), { headers: { "content-type": req.headers["content-type"]! } }).formData();
  } catch {
    throw new Errors.MoleculerClientError("Request body is not valid multipart/form-data", 400, "BAD_REQUEST");
  }
  const body: Record<string, unknown> = {};
  for (const [name, value] of form.entries()) {
    if (typeof value === "string") {
      body[name] = name === "metadata" ? parsedOr(value) : value;
      continue;
    }
    const data = Buffer.from(await value.arrayBuffer());
    if (data.length > limitBytes) throw tooLarge();
    body[name] = { filename: value.name || "upload", content_type: value.type || "application/octet-stream", data: data.toString("base64") };
  }
  return body;
}

/** A form field's JSON value, or the text itself (the validator then names the field). */
function parsedOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A request with content: chunked, or a Content-Length above 0 (an empty POST may name any type, or none). */
function carriesBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

const INVALID_UTF8 = "charset.invalid";

/** A UTF-8 body must be UTF-8: decoding would turn bad bytes into U+FFFD and store that instead of refusing them. */
function refuseInvalidUtf8(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  if (encoding.toLowerCase().replace("-", "") === "utf8" && !isUtf8(body)) {
    throw Object.assign(new Error("Request body is not valid UTF-8"), { type: INVALID_UTF8 });
  }
}

/** A body-parser error as a client error with its status; undecodable compressed bodies get a plain message. */
function bodyError(err: unknown): Errors.MoleculerClientError {
  const e = err as { status?: number; statusCode?: number; type?: string; message?: string };
  // body-parser answers every failed verification 403; a body that is not what it says it is is a 400.
  const status = e.type === INVALID_UTF8 ? 400 : (e.status ?? e.statusCode ?? 400);
  if (status === 400 && !e.type) {
    return new Errors.MoleculerClientError("Request body does not match its Content-Encoding", 400, "encoding.invalid");
  }
  return new Errors.MoleculerClientError(e.message ?? "Bad Request", status, e.type ?? "BAD_REQUEST");
}

/**
 * A parsed JSON body that is not an object, or is nested deeper than MAX_BODY_DEPTH anywhere, as a problem at the
 * top-level field it is in. Checked before any service sees the body, so a body nested 100,000 levels deep is a
 * 422, never a stack overflow in the validator or the transporter's serializer. (Keys are the free-form fields'
 * rule to check.)
 */
export function bodyProblem(body: unknown): FieldProblem | null {
  if (body === undefined) return null;
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { field: "", location: "body", message: "The request body must be a JSON object", type: "object" };
  }
  const problem = jsonProblem(body, { maxDepth: MAX_BODY_DEPTH, keys: false });
  if (!problem) return null;
  const [top] = problem.path;
  // The loc names the top-level field when its name reads as one (fieldLoc splits at dots and brackets).
  const field = typeof top === "string" && /^\w+$/.test(top) ? top : "";
  return { field, location: "body", message: jsonProblemMessage(problem), type: problem.type };
}

/** What the gateway's alias table says about a route: its method, and whether a path matches it. */
export interface MatchableAlias {
  method: string;
  match(path: string): unknown;
}

const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** The methods some alias serves at `path`, in the usual order; empty when no alias matches the path at all. */
export function allowedMethods(aliases: MatchableAlias[], path: string): string[] {
  const methods = new Set(aliases.filter((a) => a.method !== "*" && a.match(path)).map((a) => a.method.toUpperCase()));
  return METHOD_ORDER.filter((m) => methods.has(m));
}

/** What the gateway knows of an action: its params, and how it answers (lib/resource.ts ResponseDecl). */
export interface BodyFieldsDecl {
  params?: Record<string, unknown>;
  response?: { status: number; body: unknown; schemas?: Record<string, unknown> };
}

/**
 * The fields of the record a create (201) or an update (PUT, PATCH) answers with: its body may carry them, as a
 * record read and sent back does, and those the params do not take (ids, timestamps, computed fields) are ignored.
 */
function recordFields(method: string, response: BodyFieldsDecl["response"]): string[] {
  const writesRecord = method === "PUT" || method === "PATCH" || (method === "POST" && response?.status === 201);
  const ref = (response?.body as { $ref?: unknown } | undefined)?.$ref;
  if (!writesRecord || typeof ref !== "string") return [];
  const schema = response?.schemas?.[ref.slice(ref.lastIndexOf("/") + 1)] as { properties?: object } | undefined;
  return Object.keys(schema?.properties ?? {});
}

/**
 * Body fields the action does not take, one 422 problem each naming it, with the nearest field it does take when
 * one is close (`instruction`: did you mean `instructions`?), as Stripe answers unknown parameters. Fields of the
 * record the action answers with are taken (recordFields). An action without params, or whose params describe
 * the whole body (`$$root`), checks its body itself.
 */
export function unknownBodyFields(method: string, body: unknown, action: BodyFieldsDecl): FieldProblem[] {
  const { params } = action;
  if (!params || params.$$root || !body || typeof body !== "object" || Array.isArray(body)) return [];
  const taken = Object.keys(params).filter((key) => !key.startsWith("$$"));
  const accepted = new Set([...taken, ...recordFields(method.toUpperCase(), action.response)]);
  return Object.keys(body)
    .filter((key) => !accepted.has(key))
    .map((field) => {
      const near = nearestName(field, taken);
      return { field, location: "body", type: "extra_forbidden", message: `Unknown field '${field}'${near ? `; did you mean '${near}'?` : ""}` };
    });
}

/** The name closest to `name` by edit distance, when close enough to be a typo of it (at most a third of its length, and 3). */
function nearestName(name: string, names: string[]): string | undefined {
  const limit = Math.min(3, Math.floor(name.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}
