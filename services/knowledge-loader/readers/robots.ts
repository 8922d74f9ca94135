import { BOT_TOKEN, FetchError } from "../../../lib/safe-fetch";
import type { Fetcher } from "./types";

/** RFC 9309 asks parsers to read at least 500 KiB; more than that is not a robots.txt. */
const MAX_ROBOTS_BYTES = 512 * 1024;
const ROBOTS_TIMEOUT_MS = 10_000;
/** Compiled patterns kept across sites; cleared when full so a long-running loader does not grow without end. */
const MAX_COMPILED_PATTERNS = 10_000;

/** One Allow or Disallow line that applies to us. */
export interface RobotsRule {
  allow: boolean;
  pattern: string;
}

/** The rules for our user agent plus the file's Sitemap lines; plain JSON so a crawl state can carry it. */
export interface Robots {
  rules: RobotsRule[];
  sitemaps: string[];
}

const ALLOW_ALL: Robots = { rules: [], sitemaps: [] };
/** RFC 9309: an unreachable robots.txt (5xx, network) means complete disallow. */
const DISALLOW_ALL: Robots = { rules: [{ allow: false, pattern: "/" }], sitemaps: [] };

/** Non-ASCII as UTF-8 percent-escapes and escapes in upper case, so "/ü" in robots.txt matches "/%C3%BC" in a URL. */
function normalisePercent(path: string): string {
  return path.replace(/[^\x00-\x7f]/g, (c) => encodeURIComponent(c)).replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase());
}

/**
 * Our group's rules from a robots.txt: the groups naming `AgentPlatformBot` (case-insensitive, merged), else
 * the `*` groups. Sitemap lines are collected whatever group they sit in.
 */
export function parseRobots(text: string, agent = BOT_TOKEN): Robots {
  const ours = agent.toLowerCase();
  const groups: { agents: string[]; rules: RobotsRule[]; hasRuleLines: boolean }[] = [];
  const sitemaps: string[] = [];
  let current: (typeof groups)[number] | undefined;
  for (const rawLine of text.split(/\r\n|\r|\n/)) {
    const line = rawLine.replace(/#.*$/, "").trim();
    const colon = line.indexOf(":");
    if (colon < 1) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === "sitemap") {
      if (value) sitemaps.push(value);
    } else if (key === "user-agent") {
      // Consecutive user-agent lines share one group; one after a rule line starts the next group.
      if (!current || current.hasRuleLines) groups.push((current = { agents: [], rules: [], hasRuleLines: false }));
      current.agents.push(value.split("/")[0].trim().toLowerCase());
    } else if ((key === "allow" || key === "disallow") && current) {
      current.hasRuleLines = true;
      // An empty value ("Disallow:") restricts nothing: the group exists but adds no rule.
      if (value) current.rules.push({ allow: key === "allow", pattern: normalisePercent(value) });
    }
  }
  const named = groups.filter((g) => g.agents.includes(ours));
  const chosen = named.length > 0 ? named : groups.filter((g) => g.agents.includes("*"));
  return { rules: chosen.flatMap((g) => g.rules), sitemaps };
}

const compiled = new Map<string, RegExp>();

/** A robots pattern as a prefix regex: `*` is any run of characters, a final `$` anchors the end. */
function patternRegex(pattern: string): RegExp {
  let regex = compiled.get(pattern);
  if (!regex) {
    const anchored = pattern.endsWith("$");
    const body = (anchored ? pattern.slice(0, -1) : pattern)
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    regex = new RegExp(`^${body}${anchored ? "$" : ""}`);
    if (compiled.size >= MAX_COMPILED_PATTERNS) compiled.clear();
    compiled.set(pattern, regex);
  }
  return regex;
}

/** Whether robots.txt lets us fetch the URL: the longest matching pattern wins, Allow wins a tie (RFC 9309). */
export function isAllowed(robots: Robots, url: string): boolean {
  const parsed = new URL(url);
  if (parsed.pathname === "/robots.txt") return true;
  const path = normalisePercent(parsed.pathname + parsed.search);
  let best: RobotsRule | undefined;
  for (const rule of robots.rules) {
    if (!patternRegex(rule.pattern).test(path)) continue;
    if (!best || rule.pattern.length > best.pattern.length || (rule.pattern.length === best.pattern.length && rule.allow)) best = rule;
  }
  return best?.allow ?? true;
}

/**
 * The site's robots.txt as RFC 9309 reads it: 4xx means no restrictions, a server or network error means
 * complete disallow. An address the guard refuses is rethrown: the site itself cannot be loaded.
 */
export async function fetchRobots(siteUrl: string, fetch: Fetcher): Promise<Robots & { unreachable?: string }> {
  const robotsUrl = new URL("/robots.txt", siteUrl).href;
  try {
    const res = await fetch(robotsUrl, { maxBytes: MAX_ROBOTS_BYTES, timeoutMs: ROBOTS_TIMEOUT_MS });
    return parseRobots(res.body.toString("utf8"));
  } catch (err) {
    if (!(err instanceof FetchError) || err.kind === "blocked-address" || err.kind === "bad-url") throw err;
    const status = err.status;
    if (status !== undefined && status >= 400 && status < 500) return ALLOW_ALL;
    if (err.kind === "too-large") return ALLOW_ALL;
    return { ...DISALLOW_ALL, unreachable: `robots.txt unreachable: ${err.message}` };
  }
}
