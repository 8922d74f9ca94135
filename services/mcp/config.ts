/** Where the MCP server listens; MCP_PORT=0 takes an ephemeral port (tests read it from the service). */
export function loadMcpConfig() {
  const rawPort = process.env.MCP_PORT ?? "";
  const port = rawPort === "" ? 3100 : Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`MCP_PORT must be a port number, got "${rawPort}"`);
  return { port, host: process.env.MCP_HOST || "0.0.0.0" };
}

export type McpConfig = ReturnType<typeof loadMcpConfig>;
