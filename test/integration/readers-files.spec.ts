import { addressPolicy } from "../../lib/address-policy";
import { HostLimiter } from "../../lib/host-limiter";
import { FetchError } from "../../lib/safe-fetch";
import { READERS, createFetcher, resolveDataType, type ReadBatch, type ReaderDocument, type SourceReader } from "../../services/knowledge-loader/readers";
import type { WikiState } from "../../services/knowledge-loader/readers/wiki";
import { FIXTURE_PDF, WIKI_PAGES, WIKI_SPACE, WIKI_TOKEN, startFixtureSite, type FixtureSite } from "../harness/fixture-site";

const fetch = createFetcher({ limiter: new HostLimiter(4), backoffBaseMs: 20, policy: addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" }) });

/** Reads a whole source through its registry reader, as the loader does. */
async function readAll(reader: SourceReader, paths: string[], extra: { wikiToken?: string } = {}) {
  const ctx = { fetch, ...extra };
  const plan = await reader.start(paths, ctx);
  const documents: ReaderDocument[] = [];
  const failures: ReadBatch["failures"] = [];
  for (let done = false; !done; ) {
    const batch = await reader.next(plan.state, ctx);
    documents.push(...batch.documents);
    failures.push(...batch.failures);
    done = batch.done;
  }
  return { plan, documents, failures };
}

describe("file readers: pdf, markdown, text, website", () => {
  let site: FixtureSite;
  beforeAll(async () => {
    site = await startFixtureSite("files");
  });
  afterAll(() => site?.stop());

  it("extracts a real PDF's pages and title, whether served as application/pdf or octet-stream", async () => {
    const { documents, failures } = await readAll(READERS.pdf, [`${site.baseUrl}/docs/review.pdf`, `${site.baseUrl}/docs/review-octet.pdf`]);
    expect(failures).toEqual([]);
    expect(documents).toHaveLength(2);
    for (const doc of documents) {
      expect(doc.title).toBe(FIXTURE_PDF.title);
      for (const line of FIXTURE_PDF.pages.flat()) expect(doc.content).toContain(line);
      expect(doc.content).toContain("north region.\n\nSecond page"); // pages stay apart
    }
  });

  it("reports files that are not PDFs, or broken ones, as page failures", async () => {
    const { documents, failures } = await readAll(READERS.pdf, [`${site.baseUrl}/docs/fake.pdf`, `${site.baseUrl}/docs/broken.pdf`]);
    expect(documents).toEqual([]);
    expect(failures.map((f) => f.error)).toEqual([expect.stringMatching(/is not a PDF/), expect.stringMatching(/not a readable PDF/)]);
  });

  it("reads markdown and text files as readable text with titles", async () => {
    const md = await readAll(READERS.markdown, [`${site.baseUrl}/docs/handbook.md`]);
    expect(md.documents[0]).toMatchObject({ url: `${site.baseUrl}/docs/handbook.md`, title: "Support Handbook" });
    expect(md.documents[0].content).toContain("Escalate to the duty manager after an hour.");
    const txt = await readAll(READERS.text, [`${site.baseUrl}/docs/notes.txt`]);
    expect(txt.documents).toMatchObject([{ url: `${site.baseUrl}/docs/notes.txt`, title: "Release notes", content: "Release notes\n\nVersion 2 adds   webhooks." }]);
  });

  it("reads a website URL list, decoding legacy charsets and dispatching files by type", async () => {
    const { plan, documents, failures } = await readAll(READERS.website, [`${site.baseUrl}/docs/latin1.html`, `${site.baseUrl}/docs/handbook.md`, `${site.baseUrl}/missing`]);
    expect(plan.total).toBe(3);
    expect(documents.map((d) => [d.title, d.content.split("\n")[0]])).toEqual([["Café", "Crème brûlée"], ["Support Handbook", "Support Handbook"]]);
    expect(failures).toEqual([{ url: `${site.baseUrl}/missing`, error: expect.stringMatching(/HTTP 404/) }]);
  });

  it("resolves file URLs by extension without fetching them", async () => {
    const before = site.hits("/");
    expect(await resolveDataType(`${site.baseUrl}/docs/review.pdf`, fetch)).toBe("pdf");
    expect(await resolveDataType(`${site.baseUrl}/docs/handbook.md`, fetch)).toBe("markdown");
    expect(await resolveDataType(`${site.baseUrl}/docs/notes.txt`, fetch)).toBe("text");
    expect(site.hits("/")).toBe(before);
  });
});

describe("wiki reader against a Confluence-style REST API", () => {
  let wiki: FixtureSite;
  beforeAll(async () => {
    wiki = await startFixtureSite("wiki");
  });
  afterAll(() => wiki?.stop());

  it("pages through the whole space with the token, following _links.next, resumable by offset", async () => {
    const ctx = { fetch, wikiToken: WIKI_TOKEN };
    const plan = await READERS.wiki.start([`${wiki.baseUrl}/wiki/spaces/${WIKI_SPACE}/overview`], ctx);
    let state = plan.state as WikiState;
    const documents: ReaderDocument[] = [];
    for (let done = false; !done; ) {
      const batch = await READERS.wiki.next(state, ctx);
      documents.push(...batch.documents);
      done = batch.done;
      state = JSON.parse(JSON.stringify(state)) as WikiState;
    }
    expect(documents).toHaveLength(WIKI_PAGES);
    expect(documents[0]).toMatchObject({ url: `${wiki.baseUrl}/wiki/spaces/${WIKI_SPACE}/pages/1000/Runbook+1`, title: "Runbook 1" });
    expect(documents[0].content).toContain("fixture-id wiki-1000");
    expect(documents.every((d) => !d.content.includes("MACRO-PARAM-NOISE"))).toBe(true);
    expect(new Set(documents.map((d) => d.url)).size).toBe(WIKI_PAGES);
    // The server caps limit at 10: three requests, each with the token, none repeated.
    expect(wiki.hits("/wiki/rest/api/content")).toBe(3);
    expect(JSON.stringify(state)).not.toContain(WIKI_TOKEN);
  });

  it("fails with HTTP 401 on a wrong token and refuses to start without one", async () => {
    const plan = await READERS.wiki.start([`${wiki.baseUrl}/wiki/spaces/${WIKI_SPACE}`], { fetch, wikiToken: "wrong" });
    const err = await READERS.wiki.next(plan.state, { fetch, wikiToken: "wrong" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FetchError);
    expect((err as FetchError).status).toBe(401);
    await expect(READERS.wiki.start([`${wiki.baseUrl}/wiki/spaces/${WIKI_SPACE}`], { fetch })).rejects.toThrow(/needs an API token/);
  });
});
