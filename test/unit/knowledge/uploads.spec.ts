import { uploadFormat } from "../../../services/knowledge-loader/uploads";
import { mustTakeUploads, uploadDocument, uploadUrl, type UploadLimits } from "../../../services/knowledge/uploads";

const LIMITS: UploadLimits = { maxFileBytes: 1000, maxTextChars: 200, maxDocumentsPerSource: 5 };
const file = (filename: string, content_type: string, text: string) => ({ filename, content_type, data: Buffer.from(text).toString("base64") });
/** The error a call throws, as {code, type, field}. */
async function refusal(pending: Promise<unknown>) {
  try {
    await pending;
  } catch (err) {
    const e = err as { code: number; type: string; data?: { field?: string }[] };
    return { code: e.code, type: e.type, field: Array.isArray(e.data) ? e.data[0]?.field : undefined };
  }
  throw new Error("expected a refusal");
}

describe("uploaded documents", () => {
  it("knows a file's format by extension first, then by media type; DOCX and unknown types are none", () => {
    expect(uploadFormat("a.PDF", "application/octet-stream")).toBe("pdf");
    expect(uploadFormat("notes.md", "text/plain")).toBe("markdown");
    expect(uploadFormat("page.htm", "")).toBe("html");
    expect(uploadFormat("readme", "text/plain; charset=utf-8")).toBe("text");
    expect(uploadFormat("blob", "text/html")).toBe("html");
    expect(uploadFormat("report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toBeNull();
    expect(uploadFormat("image.png", "image/png")).toBeNull();
  });

  it("reads a markdown or HTML file with the loader's readers, and keeps the client's metadata beside its own", async () => {
    const md = await uploadDocument({ file: file("guide.md", "text/markdown", "# Guide\n\nSee [the docs](https://x.test) now."), metadata: { team: "a" } }, LIMITS);
    expect(md).toEqual({
      title: "Guide",
      content: expect.stringContaining("See the docs now."),
      metadata: { team: "a", source: "upload", filename: "guide.md", content_type: "text/markdown", format: "markdown", size_bytes: expect.any(Number), title: "Guide" },
      sections: [],
    });
    const html = await uploadDocument({ file: file("page.html", "text/html", "<p>No title here</p>"), metadata: {} }, LIMITS);
    expect(html.title).toBe("page.html");
    expect(html.content).toBe("No title here");
  });

  it("takes a JSON text: the title given, else its first line; the url goes into the metadata", async () => {
    expect(await uploadDocument({ text: "First line\nSecond", metadata: {} }, LIMITS)).toMatchObject({ title: "First line", metadata: { format: "text" } });
    expect((await uploadDocument({ text: "x", title: " Named ", url: "https://a.test/x", metadata: {} }, LIMITS)).metadata).toMatchObject({ title: "Named", url: "https://a.test/x" });
  });

  it("refuses both or neither, unknown formats, fake PDFs, empty text and big metadata with 422; big files and texts with 413", async () => {
    expect(await refusal(uploadDocument({ metadata: {} }, LIMITS))).toEqual({ code: 422, type: "VALIDATION_ERROR", field: "file" });
    expect(await refusal(uploadDocument({ text: "a", file: file("a.txt", "text/plain", "a"), metadata: {} }, LIMITS))).toMatchObject({ code: 422 });
    expect(await refusal(uploadDocument({ file: file("a.docx", "application/zip", "PK"), metadata: {} }, LIMITS))).toMatchObject({ code: 422, field: "file" });
    expect(await refusal(uploadDocument({ file: file("a.pdf", "application/pdf", "hello"), metadata: {} }, LIMITS))).toMatchObject({ code: 422, field: "file" });
    expect(await refusal(uploadDocument({ text: "   ", metadata: {} }, LIMITS))).toMatchObject({ code: 422, field: "text" });
    expect(await refusal(uploadDocument({ text: "a", metadata: { big: "x".repeat(20_000) } }, LIMITS))).toMatchObject({ code: 422, field: "metadata" });
    expect(await refusal(uploadDocument({ file: file("a.txt", "text/plain", "x".repeat(1001)), metadata: {} }, LIMITS))).toMatchObject({ code: 413, type: "PAYLOAD_TOO_LARGE" });
    expect(await refusal(uploadDocument({ text: "y".repeat(201), metadata: {} }, LIMITS))).toMatchObject({ code: 413 });
  });

  it("keys a document by the url given, else a unique upload: URL in its source; only upload sources take documents", () => {
    expect(uploadUrl(7, "https://a.test/doc")).toBe("https://a.test/doc");
    expect(uploadUrl(7, undefined)).toMatch(/^upload:\/\/7\/[0-9a-f-]{36}$/);
    expect(uploadUrl(7, undefined)).not.toBe(uploadUrl(7, undefined));
    expect(() => mustTakeUploads({ _id: 1, data_type: "upload" })).not.toThrow();
    expect(() => mustTakeUploads({ _id: 1, data_type: "website" })).toThrow(expect.objectContaining({ code: 422 }));
  });
});
