import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { HostLimiter } from "../../../lib/host-limiter";
import { clipTitle, firstLineTitle, normaliseText } from "./text";

/** A PDF that takes longer than this to read is hostile or pathological; its worker is terminated. */
const PDF_TIMEOUT_MS = 30_000;
/** Heap of the parsing worker: a crafted PDF can ask pdf.js for any amount of memory. */
const PDF_WORKER_HEAP_MB = 512;
/** PDFs parsed at once per process: each worker may take its full heap. */
const PDF_CONCURRENCY = 2;
/** HostLimiter is a keyed semaphore; one key serves as the process-wide PDF slot pool. */
const pdfSlots = new HostLimiter(PDF_CONCURRENCY);

/**
 * Runs in a worker thread. unpdf (pdf.js packaged without canvas) is ESM-only inside, which jest 29's CommonJS
 * runtime cannot import; a worker is plain Node, and it also isolates pdf.js's CPU and memory from the loader.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
(async () => {
  const { getDocumentProxy, extractText, getMeta } = await import(workerData.unpdf);
  const pdf = await getDocumentProxy(new Uint8Array(workerData.data), { isEvalSupported: false, verbosity: 0 });
  const [{ text }, meta] = await Promise.all([extractText(pdf, { mergePages: false }), getMeta(pdf)]);
  parentPort.postMessage({ pages: text, title: (meta.info && meta.info.Title) || "" });
})().catch((err) => parentPort.postMessage({ error: String((err && err.message) || err) }));
`;

/** The text of a PDF, page by page, with the title from its metadata (else its first line). */
export interface PdfExtract {
  title: string;
  content: string;
  pages: number;
}

function runWorker(data: Buffer): Promise<{ pages: string[]; title: string }> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { unpdf: pathToFileURL(require.resolve("unpdf")).href, data },
    resourceLimits: { maxOldGenerationSizeMb: PDF_WORKER_HEAP_MB },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`PDF not read within ${PDF_TIMEOUT_MS} ms`));
      void worker.terminate();
    }, PDF_TIMEOUT_MS);
    const settle = () => (clearTimeout(timer), void worker.terminate());
    worker.once("message", (msg: { pages: string[]; title: string } | { error: string }) => {
      settle();
      if ("error" in msg) reject(new Error(`not a readable PDF: ${msg.error}`));
      else resolve(msg);
    });
    worker.once("error", (err) => (settle(), reject(new Error(`not a readable PDF: ${err.message}`))));
    worker.once("exit", (code) => (settle(), reject(new Error(`PDF reader stopped (exit ${code})`))));
  });
}

/** Text and title of a PDF file; pages are separated by blank lines so chunking sees their boundaries. */
export async function extractPdf(data: Buffer): Promise<PdfExtract> {
  const release = await pdfSlots.acquire("pdf");
  const { pages, title } = await runWorker(data).finally(release);
  const content = normaliseText(pages.join("\n\n"));
  return { title: title.trim() ? clipTitle(title.trim()) : firstLineTitle(content, ""), content, pages: pages.length };
}
