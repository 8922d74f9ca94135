import type { Config } from "./config";
import pkg from "../package.json";
import { defineView } from "./resource";

/** Version of the deployed build (package.json, emitted beside the build by tsc). */
export const VERSION: string = pkg.version;

/** The body of GET /health and of the MCP svc_health tool; always "healthy" when it answers at all. */
export function healthReport(config: Pick<Config, "serverName" | "apiUrl">) {
  return { status: "healthy", server: config.serverName, version: VERSION, api_url: config.apiUrl };
}

const str = { type: "string" } as const;
export const Health = defineView("Health", { status: { read: str }, server: { read: str }, version: { read: str }, api_url: { read: str } });
