import type { AddressPolicy } from "../../lib/address-policy";
import { createFetcher, resolveDataType } from "./readers";
import type { DataType } from "../knowledge";

/** Time a create may spend looking for a sitemap before it settles on discovery. */
const RESOLVE_TIMEOUT_MS = 5_000;

/**
 * The stored data_type of a new or edited source: `auto` becomes a file type by extension, else
 * sitemap when the site has one, else discovery. Runs on create, so the response reports the resolved type.
 */
export async function resolveSourceType(requested: DataType, paths: string[], policy: AddressPolicy): Promise<Exclude<DataType, "auto">> {
  if (requested !== "auto") return requested;
  try {
    return await resolveDataType(paths[0]!, createFetcher({ timeoutMs: RESOLVE_TIMEOUT_MS, retries: 0, policy }));
  } catch {
    // Unreachable or refused (SSRF guard): the load will record why; crawling is the safe default.
    return "discovery";
  }
}
