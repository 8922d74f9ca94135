import { decodeText } from "./readers/decode";
import { extractHtml } from "./readers/html";
import { extractMarkdown } from "./readers/markdown";
import { extractPdf } from "./readers/pdf";
import { extractPlainText } from "./readers/text";

/**
 * Uploaded files read with the loader's own readers, so an uploaded PDF, markdown, text or HTML file becomes the
 * same title and text as the same file loaded from a URL (docs/adr/0055-uploaded-documents.md). DOCX is not read:
 * no maintained DOCX parser is installed, and one is not added for this.
 */

/** The file formats an upload may have. */
export const UPLOAD_FORMATS = ["pdf", "markdown", "text", "html"] as const;
export type UploadFormat = (typeof UPLOAD_FORMATS)[number];

const BY_EXTENSION: Record<string, UploadFormat> = { pdf: "pdf", md: "markdown", markdown: "markdown", txt: "text", text: "text", html: "html", htm: "html" };
const BY_MEDIA_TYPE: Record<string, UploadFormat> = {
  "application/pdf": "pdf",
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "text/plain": "text",
  "text/html": "html",
  "application/xhtml+xml": "html",
};

/** The format of an uploaded file: by its name's extension, else its media type; null when it is none we read. */
export function uploadFormat(filename: string, contentType: string): UploadFormat | null {
  const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase();
  if (ext && BY_EXTENSION[ext]) return BY_EXTENSION[ext];
  return BY_MEDIA_TYPE[contentType.split(";")[0]!.trim().toLowerCase()] ?? null;
}

/** A PDF starts with this (a file named .pdf that is not one is refused, not fed to the PDF reader). */
const PDF_MAGIC = "%PDF-";

/** The title and text of an uploaded file of a known format; throws (with a message for the client) when it cannot be read. */
export async function extractUpload(file: { filename: string; content_type: string; data: Buffer }, format: UploadFormat): Promise<{ title: string; content: string; sections?: number[] }> {
  const name = file.filename;
  switch (format) {
    case "pdf": {
      if (file.data.subarray(0, PDF_MAGIC.length).toString("latin1") !== PDF_MAGIC) throw new Error("file is not a PDF");
      const pdf = await extractPdf(file.data);
      return { title: pdf.title || name, content: pdf.content };
    }
    case "markdown":
      return extractMarkdown(decodeText(file.data, file.content_type), name);
    case "html": {
      // The base URL resolves the page's relative links (not kept); a page without a title falls back to it.
      const base = "https://upload.invalid/";
      const html = extractHtml(decodeText(file.data, file.content_type, true), base);
      return { title: html.title && html.title !== base ? html.title : name, content: html.content, sections: html.sections };
    }
    case "text":
      return extractPlainText(decodeText(file.data, file.content_type), name);
  }
}
