import path from "node:path";

/** Name or description taken from the first path when the client left it blank: the URL's hostname. */
export function derivedLabel(paths: string[]): string {
  const first = paths[0] ?? "";
  try {
    return new URL(first).hostname || path.basename(first);
  } catch {
    return path.basename(first) || "knowledge source";
  }
}

/** data_type from a path's extension, for auto sources that are single files rather than websites. */
export function typeFromExtension(url: string): "pdf" | "markdown" | "text" | null {
  let pathname: string;
  try {
    pathname = new URL(url).pathname.toLowerCase();
  } catch {
    return null;
  }
  if (pathname.endsWith(".pdf")) return "pdf";
  if (pathname.endsWith(".md") || pathname.endsWith(".markdown")) return "markdown";
  if (pathname.endsWith(".txt")) return "text";
  return null;
}

/** The DeletionResponse of queued deletions. */
export function deletionResponse(jobId: string, what: string) {
  return { success: true, message: `${what} deletion queued`, job_id: jobId, status: "queued" };
}

/** The PreloadResponse. */
export function preloadResponse(eventId: string, note: string) {
  return { success: true, message: "Knowledge load queued", event_id: eventId, status: "queued", note };
}

/** The PreloadResponse when nothing was queued: the source is loaded and force was false. */
export function preloadSkipped() {
  return {
    success: false,
    message: "The source is already loaded; nothing was queued",
    event_id: null,
    status: "skipped",
    note: "Preload with force=true to reload it",
  };
}
