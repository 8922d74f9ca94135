/*
 * The knowledge loader's public face (docs/adr/0052-service-boundaries.md): the only file of
 * services/knowledge-loader/ another service may import.
 */

/** Resolves `data_type: auto` with the loader's readers (the knowledge service's create, docs/adr/0047). */
export { resolveSourceType } from "./resolve";
/** Reads an uploaded file with the loader's readers (the knowledge service's document uploads, docs/adr/0055). */
export { extractUpload, uploadFormat, UPLOAD_FORMATS, type UploadFormat } from "./uploads";
/** A title from a text's first line, as the readers give one (the knowledge service's text uploads). */
export { firstLineTitle } from "./readers/text";
