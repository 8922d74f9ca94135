import type { FieldProblem } from "./errors";

/**
 * Why a URL the platform will fetch or post to is refused at the API, or null: it must parse as an absolute http
 * or https URL that names a host (`http://:3250/` passes a URL pattern but names none). Whether its address may
 * be reached is checked when it is used (lib/safe-fetch.ts, the webhook sender).
 */
export function httpUrlProblem(url: string, field: string): FieldProblem | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { field, message: `The '${field}' field must be an absolute http or https URL.`, type: "url" };
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) {
    return { field, message: `The '${field}' field must use http or https and name a host.`, type: "url" };
  }
  return null;
}
