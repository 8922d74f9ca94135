import net from "node:net";
import { listEnv, type Env } from "./env";

// Which addresses the platform may connect to on a user's behalf (knowledge loads, webhooks): public ones,
// loopback and private ranges only when the operator opens them, never metadata, multicast or reserved space.

type AddressClass = "public" | "loopback" | "private" | "forbidden";

function blockList(ipv4: string[], ipv6: string[]): net.BlockList {
  const list = new net.BlockList();
  for (const cidr of ipv4) list.addSubnet(cidr.split("/")[0], Number(cidr.split("/")[1]), "ipv4");
  for (const cidr of ipv6) list.addSubnet(cidr.split("/")[0], Number(cidr.split("/")[1]), "ipv6");
  return list;
}

/** Never reachable, whatever the allow-list says: "this host", cloud metadata, multicast and reserved space. */
const FORBIDDEN = blockList(
  ["0.0.0.0/8", "169.254.169.254/32", "100.100.100.200/32", "224.0.0.0/4", "240.0.0.0/4"],
  ["::/128", "fd00:ec2::254/128", "ff00::/8", "2001::/32"],
);
const LOOPBACK = blockList(["127.0.0.0/8"], ["::1/128"]);
/** Not globally routable: private, shared (CGNAT), link-local, documentation and benchmark ranges, ULA. */
const PRIVATE = blockList(
  [
    "10.0.0.0/8",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
  ],
  ["fc00::/7", "fe80::/10", "fec0::/10", "2001:db8::/32", "100::/64"],
);

/** Eight 16-bit groups of a valid IPv6 address (a dotted IPv4 tail included). */
function ipv6Groups(ip: string): number[] {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split(".").map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const parse = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The IPv4 address an IPv6 form carries (IPv4-mapped, IPv4-compatible, NAT64, 6to4), so ::ffff:127.0.0.1
 * or 64:ff9b::a9fe:a9fe are judged as the IPv4 address they reach.
 */
function embeddedIpv4(groups: number[]): string | undefined {
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return quad(groups[6], groups[7]);
  if (zeros(0, 6) && (groups[6] !== 0 || groups[7] > 1)) return quad(groups[6], groups[7]);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return quad(groups[6], groups[7]);
  if (groups[0] === 0x2002) return quad(groups[1], groups[2]);
  return undefined;
}

/** The address as BlockList checks it: no brackets or zone, and the IPv4 address an IPv6 form carries. */
function normaliseAddress(address: string): string {
  const ip = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  return (net.isIPv6(ip) && embeddedIpv4(ipv6Groups(ip))) || ip;
}

function family(ip: string): "ipv4" | "ipv6" | undefined {
  return net.isIPv4(ip) ? "ipv4" : net.isIPv6(ip) ? "ipv6" : undefined;
}

/** Where an address points: "public", "loopback", "private" (allow-listable) or "forbidden". */
export function classifyAddress(address: string): AddressClass {
  const ip = normaliseAddress(address);
  const type = family(ip);
  if (!type || FORBIDDEN.check(ip, type)) return "forbidden";
  if (LOOPBACK.check(ip, type)) return "loopback";
  if (PRIVATE.check(ip, type)) return "private";
  return "public";
}

/** Which addresses besides public ones outgoing requests may reach; part of the configuration tree (lib/config). */
export interface AddressPolicy {
  /** ALLOW_LOOPBACK_TARGETS=true: loopback (tests, local development). */
  allowLoopback: boolean;
  /** ALLOWED_PRIVATE_CIDRS: private ranges that may be reached (never forbidden addresses). */
  allowedPrivateCidrs: string[];
}

/** Public addresses only: what a caller that was given no policy gets. */
export const PUBLIC_ONLY: AddressPolicy = { allowLoopback: false, allowedPrivateCidrs: [] };

let allowListCache: { source: string; list: net.BlockList } | undefined;

/** The allowed private ranges parsed once per distinct list; a bad entry is a configuration error, not a silent no-op. */
function allowedPrivate(cidrs: string[]): net.BlockList {
  const source = cidrs.join(",");
  if (allowListCache?.source === source) return allowListCache.list;
  const list = new net.BlockList();
  for (const entry of cidrs) {
    const [ip, bits] = entry.split("/");
    const type = family(ip);
    const width = type === "ipv4" ? 32 : 128;
    const prefix = bits === undefined ? width : Number(bits);
    if (!type || !Number.isInteger(prefix) || prefix < 0 || prefix > width) {
      throw new Error(`ALLOWED_PRIVATE_CIDRS: "${entry}" is not a CIDR`);
    }
    list.addSubnet(ip, prefix, type);
  }
  allowListCache = { source, list };
  return list;
}

/** The policy the environment sets (ALLOW_LOOPBACK_TARGETS, ALLOWED_PRIVATE_CIDRS); a malformed range stops the start. */
export function addressPolicy(env: Env): AddressPolicy {
  const policy = { allowLoopback: env.ALLOW_LOOPBACK_TARGETS === "true", allowedPrivateCidrs: listEnv(env, "ALLOWED_PRIVATE_CIDRS") };
  allowedPrivate(policy.allowedPrivateCidrs);
  return policy;
}

/** Whether the platform may connect to this address under `policy`; forbidden addresses stay closed whatever it says. */
export function isAddressAllowed(address: string, policy: AddressPolicy): boolean {
  const kind = classifyAddress(address);
  if (kind === "public") return true;
  if (kind === "loopback") return policy.allowLoopback;
  if (kind === "private") {
    const ip = normaliseAddress(address);
    return allowedPrivate(policy.allowedPrivateCidrs).check(ip, family(ip)!);
  }
  return false;
}
