import { randomUUID } from "node:crypto";
import { ERRORS } from "../../lib/errors";
import { freeJsonRule } from "../../lib/free-json";
import { extractUpload, firstLineTitle, uploadFormat, UPLOAD_FORMATS } from "../knowledge-loader";
import { charCount } from "../../lib/text";

/*
 * Documents added to an `upload` knowledge source by hand (issue 26, item 1; docs/adr/0055-uploaded-documents.md):
 * a file (PDF, markdown, text, HTML) or a JSON text. They are indexed like loaded pages, through the search
 * service's actions, and no load ever touches them: an upload source is never loaded.
 */

/** The data type of sources whose documents are uploaded. */
export const UPLOAD_DATA_TYPE = "upload";

/** Largest metadata object kept with a document, as JSON characters. */
const MAX_METADATA_CHARS = 16_384;
/** Longest title (the search service's limit). */
const MAX_TITLE_CHARS = 1000;

/** An uploaded file, as the multipart parser (services/gateway/request.ts) or a JSON client sends it. */
export interface UploadedFile {
  filename: string;
  content_type: string;
  /** The file's bytes, base64. */
  data: string;
}

/** The body of POST /knowledge/{id}/documents and PUT /knowledge/{id}/documents/{document_id}. */
export const documentBodyParams = {
  file: {
    type: "object",
    optional: true,
    description: "The file (multipart/form-data field `file`; in JSON {filename, content_type, data} with data in base64): PDF, markdown, plain text or HTML",
    props: {
      filename: { type: "string", min: 1, max: 255, description: "The file's name; its extension tells the format" },
      content_type: { type: "string", max: 255, optional: true, default: "application/octet-stream", description: "The file's media type (used when the name has no known extension)" },
      data: { type: "string", base64: true, description: "The file's bytes, base64" },
    },
    strict: "remove",
  },
  text: { type: "string", min: 1, optional: true, description: "The document's text (instead of a file)" },
  title: { type: "string", max: MAX_TITLE_CHARS, trim: true, optional: true, description: "The document's title; from the file (or the text's first line) when omitted" },
  url: { type: "url", max: 4096, optional: true, description: "Where the document lives, if anywhere (shown in search results); its key in the source" },
  metadata: freeJsonRule({ type: "object", optional: true, default: {}, description: "Free-form attributes kept with the document" }),
} as const;
/**
 * PUT's url: the document's url as stored, which never changes, so a document read and sent back is accepted, an
 * uploaded one's own `upload://` url included.
 */
export const replacementUrlRule = {
  type: "string",
  max: 4096,
  pattern: "^(?:https?|upload)://\\S+",
  optional: true,
  description: "The document's url as stored (it does not change); may be left out",
} as const;
export type DocumentBody = { file?: UploadedFile; text?: string; title?: string; url?: string; metadata: Record<string, unknown> };

/** Limits from configuration (lib/config.ts `uploads`). */
export interface UploadLimits {
  maxFileBytes: number;
  maxTextChars: number;
  maxDocumentsPerSource: number;
}

/** What the search service indexes for one uploaded document. */
export interface UploadDocument {
  title: string;
  content: string;
  /** Offsets into content where a heading begins (a Markdown or HTML file), for the `heading` chunking. */
  sections?: number[];
  metadata: Record<string, unknown>;
}

/**
 * The document a body describes: the file read with the loader's readers, or the text as given. 422 for a body with
 * both or neither, an unknown format, a file that cannot be read or gives no text, oversized metadata; 413 for a
 * file or text past the limits.
 */
export async function uploadDocument(body: DocumentBody, limits: UploadLimits): Promise<UploadDocument> {
  const { file, text } = body;
  if ((file === undefined) === (text === undefined)) {
    throw ERRORS.validation([{ type: "required", field: "file", message: "Send either a file (`file`) or a text (`text`), not both" }]);
  }
  const metadataChars = JSON.stringify(body.metadata ?? {}).length;
  if (metadataChars > MAX_METADATA_CHARS) {
    throw ERRORS.validation([{ type: "objectMaxProps", field: "metadata", message: `metadata must be at most ${MAX_METADATA_CHARS} characters as JSON (it is ${metadataChars})` }]);
  }
  let extracted: { title: string; content: string; sections?: number[] };
  const origin: Record<string, unknown> = { source: "upload" };
  if (file) {
    const data = Buffer.from(file.data, "base64");
    if (data.length > limits.maxFileBytes) throw ERRORS.payloadTooLarge(`The file is larger than the limit of ${limits.maxFileBytes} bytes`, { limit_bytes: limits.maxFileBytes });
    if (!data.length) throw ERRORS.validation([{ type: "required", field: "file", message: "The file is empty" }]);
    const format = uploadFormat(file.filename, file.content_type);
    if (!format) {
      throw ERRORS.validation([{ type: "enumValue", field: "file", message: `Unsupported file type: ${file.filename} (${file.content_type}); accepted: ${UPLOAD_FORMATS.join(", ")} (.pdf, .md, .txt, .html)` }]);
    }
    try {
      extracted = await extractUpload({ ...file, data }, format);
    } catch (err) {
      throw ERRORS.validation([{ type: "file", field: "file", message: `The ${format} file could not be read: ${(err as Error).message}` }]);
    }
    Object.assign(origin, { filename: file.filename, content_type: file.content_type, format, size_bytes: data.length });
  } else {
    const content = text!.replace(/\r\n?/g, "\n").trim();
    extracted = { title: firstLineTitle(content, ""), content };
    origin.format = "text";
  }
  if (!extracted.content.trim()) throw ERRORS.validation([{ type: "required", field: file ? "file" : "text", message: "The document has no text to index" }]);
  if (charCount(extracted.content) > limits.maxTextChars) {
    throw ERRORS.payloadTooLarge(`The document's text is longer than the limit of ${limits.maxTextChars} characters`, { limit_chars: limits.maxTextChars });
  }
  const title = body.title?.trim() || extracted.title || "Untitled document";
  return { title, content: extracted.content, ...(extracted.sections ? { sections: extracted.sections } : {}), metadata: { ...body.metadata, ...origin, title, ...(body.url ? { url: body.url } : {}) } };
}

/** The key (URL) of a new uploaded document: the URL given, else one of the upload: scheme, unique in the source. */
export function uploadUrl(sourceId: number, given: string | undefined): string {
  return given ?? `upload://${sourceId}/${randomUUID()}`;
}

/** 422 unless the source takes uploads. */
export function mustTakeUploads(source: { _id: number; data_type: string }): void {
  if (source.data_type !== UPLOAD_DATA_TYPE) {
    throw ERRORS.validation([
      { type: "enumValue", field: "knowledge_source_id", message: `Knowledge source ${source._id} is of data_type ${source.data_type}; documents can be added only to a source of data_type ${UPLOAD_DATA_TYPE}` },
    ]);
  }
}
