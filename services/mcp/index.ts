/*
 * The MCP service's public face (docs/adr/0052-service-boundaries.md): the only file of services/mcp/ another
 * service may import.
 */

/** The Streamable HTTP handler the gateway mounts at /mcp. */
export { mcpHttpHandler, type McpHttpDeps } from "./http";
