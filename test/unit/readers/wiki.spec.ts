import { parseWikiPath } from "../../../services/knowledge-loader/readers/wiki";

describe("parseWikiPath", () => {
  it("finds base URL and space key in the usual Confluence URL forms", () => {
    expect(parseWikiPath("https://acme.atlassian.net/wiki/spaces/ENG/overview")).toEqual({ baseUrl: "https://acme.atlassian.net/wiki", spaceKey: "ENG" });
    expect(parseWikiPath("https://wiki.acme.com/display/OPS/Home")).toEqual({ baseUrl: "https://wiki.acme.com", spaceKey: "OPS" });
    expect(parseWikiPath("https://wiki.acme.com/confluence/?spaceKey=HR")).toEqual({ baseUrl: "https://wiki.acme.com/confluence", spaceKey: "HR" });
    expect(() => parseWikiPath("https://wiki.acme.com/pages/123")).toThrow(/not a wiki space URL/);
  });
});
