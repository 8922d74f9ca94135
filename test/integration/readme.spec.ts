import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startCluster, type Cluster } from "../harness/cluster";

const README = readFileSync(path.resolve(__dirname, "..", "..", "README.md"), "utf8");
/** What the README addresses, and what a test run answers at instead. */
const README_BASE = "http://localhost:3000";
const README_PAGE = "https://example.com/";

/** The fenced blocks of `lang` in the README section headed `heading` (up to the next `## `). */
function blocks(heading: string, lang: string): string[] {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no "## ${heading}" section`);
  const end = README.indexOf("\n## ", start + heading.length + 5);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

/** Where an MCP client configuration sends its requests: the URL and the headers, as the client would. */
interface McpTarget {
  client: string;
  url: string;
  headers: Record<string, string>;
}

/** The server entry of a Cursor / Claude Code (url + headers) or Claude Desktop (npx mcp-remote URL --header) configuration. */
function targetOf(client: string, config: { mcpServers: Record<string, Record<string, any>> }, apiKey: string): McpTarget {
  const entries = Object.values(config.mcpServers);
  expect(entries).toHaveLength(1);
  const server = entries[0]!;
  const env: Record<string, string> = { AGENT_PLATFORM_API_KEY: apiKey, ...server.env };
  const fill = (text: string) => text.replace("apk_...", apiKey).replace(/\$\{(\w+)\}/g, (_, name: string) => (env[name] === "apk_..." ? apiKey : env[name]!));
  if (server.url) return { client, url: server.url, headers: Object.fromEntries(Object.entries(server.headers as Record<string, string>).map(([k, v]) => [k, fill(v)])) };
  expect(server.command).toBe("npx");
  const args = server.args as string[];
  const bridge = args.indexOf("mcp-remote");
  expect(bridge).toBeGreaterThanOrEqual(0);
  const header = args[args.indexOf("--header") + 1]!;
  expect(header).not.toMatch(/: /); // mcp-remote's advice: no space, Windows splits arguments there
  const colon = header.indexOf(":");
  return { client, url: args[bridge + 1]!, headers: { [header.slice(0, colon)]: fill(header.slice(colon + 1)) } };
}

/**
 * The README's quickstart and MCP client configuration, run as written: the `sh` block with bash against a
 * running platform (its base URL and example page swapped for the test's), the configuration blocks parsed and
 * used to call the MCP tools.
 */
describe("README quickstart and MCP client configuration", () => {
  let cluster: Cluster;
  let site: Server;
  let pageUrl: string;
  let output: string;

  beforeAll(async () => {
    site = createServer((req, res) => {
      if (req.url !== "/") return res.writeHead(404).end();
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        "<!doctype html><html><head><title>Example Domain</title></head><body><h1>Example Domain</h1>" +
          "<p>This domain is for use in illustrative examples in documents. You may use this domain in literature " +
          "without prior coordination or asking for permission.</p></body></html>",
      );
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    cluster = await startCluster({
      database: "readme",
      env: { EMBEDDING_PROVIDER: "none" },
      nodes: [["gateway"], ["users", "api-keys", "agents", "knowledge", "search", "entities", "mcp"], ["knowledge-loader"]],
    });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await new Promise((resolve) => site?.close(resolve));
  });

  it("starts with the set-up commands, then the quickstart and the MCP clients, before the rest", () => {
    const sections = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(sections.slice(0, 4)).toEqual(["Set up", "Quickstart", "MCP clients", "Run and test"]);
    expect(blocks("Set up", "sh")[0]).toMatch(/^npm ci\b[^\n]*\nnpm start\b/);
  });

  it("the quickstart runs, every step succeeding, and finds the page it loaded", async () => {
    const [script] = blocks("Quickstart", "sh");
    expect(script).toContain(README_BASE);
    expect(script).toContain(README_PAGE);
    const runnable = script!.replaceAll(README_BASE, cluster.baseUrl).replaceAll(README_PAGE, pageUrl);
    // -e and pipefail: any failed curl (-f: any HTTP error) or jq stops the run with its status.
    output = await new Promise<string>((resolve, reject) =>
      execFile("bash", ["-euo", "pipefail", "-c", runnable], { timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`quickstart failed: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
      ),
    );
    expect(output).toMatch(/"role": "owner"/);
    expect(output).toMatch(/loading_status: loaded/);
    expect(output).toMatch(/"knowledge_sources": \[\s*"Example"\s*\]/);
    const search = output.slice(output.indexOf('"total_results"') - 4, output.indexOf("API key for"));
    const { total_results, results } = JSON.parse(search) as { total_results: number; results: { title: string; content: string }[] };
    expect(total_results).toBeGreaterThan(0);
    expect(results[0]).toMatchObject({ title: "Example Domain", content: expect.stringContaining("Example Domain") });
    expect(output).toMatch(/API key for the MCP clients below: apk_\S+/);
  }, 150_000);

  it("each MCP client configuration reaches the MCP server with the quickstart's API key", async () => {
    const apiKey = /API key for the MCP clients below: (apk_\S+)/.exec(output)![1]!;
    const configs = blocks("MCP clients", "json");
    expect(configs).toHaveLength(3);
    const targets = [
      targetOf("Cursor", JSON.parse(configs[0]!), apiKey),
      targetOf("Claude Code", JSON.parse(configs[1]!), apiKey),
      targetOf("Claude Desktop", JSON.parse(configs[2]!), apiKey),
    ];
    const command = /^claude mcp add --transport http (\S+) (\S+) --header "([^:]+): (\S+)"\n$/.exec(blocks("MCP clients", "console")[0]!)!;
    targets.push({ client: "claude mcp add", url: command[2]!, headers: { [command[3]!]: command[4]!.replace("apk_...", apiKey) } });

    for (const target of targets) {
      expect([target.client, target.url, Object.keys(target.headers)]).toEqual([target.client, `${README_BASE}/mcp`, ["X-AUTH-TOKEN"]]);
      const client = new Client({ name: target.client, version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(target.url.replace(README_BASE, cluster.baseUrl)), { requestInit: { headers: target.headers } }),
      );
      try {
        // The interface's three tools, then the knowledge retrieval tools (docs/adr/0054-mcp-retrieval-tools.md).
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
          "svc_health", "svc_collected_data", "svc_collected_data_delete", "svc_knowledge_search", "svc_knowledge_sources", "svc_knowledge_document",
        ]);
        const stats = (await client.callTool({ name: "svc_collected_data", arguments: { action: "stats" } })) as CallToolResult;
        expect([target.client, stats.isError ?? false]).toEqual([target.client, false]);
        expect(stats.structuredContent).toMatchObject({ total: 0 });
      } finally {
        await client.close();
      }
    }
  });
});
