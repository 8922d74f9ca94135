import type { FieldProblem } from "../../lib/errors";
import { jsonProblem, jsonProblemMessage, MAX_BODY_DEPTH } from "../../lib/free-json";

/**
 * A parsed JSON body nested deeper than MAX_BODY_DEPTH, anywhere, as a problem at the top-level field it is in.
 * Checked before any service sees the body, so a body nested 100,000 levels deep is a 422, never a stack
 * overflow in the validator or the transporter's serializer. (Keys are the free-form fields' rule to check.)
 */
export function bodyProblem(body: unknown): FieldProblem | null {
  const problem = jsonProblem(body, { maxDepth: MAX_BODY_DEPTH, keys: false });
  if (!problem) return null;
  const [top] = problem.path;
  // The loc names the top-level field when its name reads as one (fieldLoc splits at dots and brackets).
  const field = typeof top === "string" && /^\w+$/.test(top) ? top : "";
  return { field, location: "body", message: jsonProblemMessage(problem), type: problem.type };
}

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

/** Headers every response carries: no sniffing, no framing, no referrer leaks, no caching of API data. */
export const SECURITY_HEADERS: Record<string, string> = {
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};
