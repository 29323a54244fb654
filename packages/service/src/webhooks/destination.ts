/**
 * Where webhooks may be sent (issue 20, finding 6). By default only to public addresses: loopback, private
 * ranges, link-local (169.254.169.254 is a cloud metadata service), shared, multicast and reserved addresses
 * are refused — a webhook URL is otherwise a way to make the service POST into its own network, and the
 * delivery status a port scanner. An operator with an internal receiver lists its addresses or ranges in
 * `webhooks.allowedDestinations`; this service's own listeners stay refused even then.
 *
 * The check is made on the address the URL's host resolves to *at delivery*, and the connection is then made
 * to exactly that address (send.ts pins it), so a name cannot resolve to a public address for the check and
 * to an internal one for the connection. At creation only what needs no resolution is checked: an IP literal
 * or a localhost name. Redirects are never followed (send.ts), so a public receiver cannot bounce a request
 * inward.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { inList, rangeList } from "../access/clientAddress.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (tests inject one: no test resolves a real name). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export interface DestinationPolicy {
  /** Ranges allowed although internal (the operator's `webhooks.allowedDestinations`), as CIDR. */
  readonly allowed: readonly string[];
  /** Ports of this service's own loopback listeners (public, metrics, admin): never a destination. */
  readonly ownPorts: Set<number>;
  readonly resolve: Resolver;
}

const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** A policy; `allowed` are CIDR ranges (as the configuration normalises them). */
export function destinationPolicy(options: { allowed?: readonly string[]; ownPorts?: Iterable<number>; resolve?: Resolver } = {}): DestinationPolicy {
  return { allowed: options.allowed ?? [], ownPorts: new Set(options.ownPorts ?? []), resolve: options.resolve ?? systemResolver };
}

/** The default: public addresses only, resolved by the system. */
export const PUBLIC_ONLY: DestinationPolicy = Object.freeze(destinationPolicy());

/** Internal address classes, the first match naming the refusal. */
const CLASSES: readonly [string, readonly string[]][] = [
  ["a loopback address", ["127.0.0.0/8", "::1/128"]],
  ["an unspecified address", ["0.0.0.0/8", "::/128"]],
  ["a private address", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"]],
  ["a link-local address", ["169.254.0.0/16", "fe80::/10"]],
  ["a shared (carrier-grade NAT) address", ["100.64.0.0/10"]],
  ["a reserved address", ["192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "2001:db8::/32"]],
  ["a multicast or broadcast address", ["224.0.0.0/4", "ff00::/8"]],
];
const CLASS_LISTS: readonly [string, BlockList][] = CLASSES.map(([name, ranges]) => [name, rangeList(ranges)]);
const LOOPBACK = rangeList(["127.0.0.0/8", "::1/128"]);
/** Every internal range, for the socket layer (send.ts): a second, independent refusal below the check above. */
const INTERNAL = rangeList(CLASSES.flatMap(([, ranges]) => ranges));

/** "::ffff:10.0.0.1" / "::ffff:a00:1" (IPv4-mapped) -> "10.0.0.1"; other addresses as they are. */
function unmapped(address: string): string {
  const lower = address.toLowerCase();
  if (!lower.startsWith("::ffff:")) return address;
  const rest = lower.slice(7);
  if (isIP(rest) === 4) return rest;
  const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
  if (m === null) return address;
  const [hi, lo] = [parseInt(m[1]!, 16), parseInt(m[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Which internal class `address` is in, or undefined for a public address. */
export function internalClass(address: string): string | undefined {
  const plain = unmapped(address);
  return CLASS_LISTS.find(([, list]) => inList(list, plain))?.[0];
}

/** Why `address`:`port` may not be a destination under `policy`, or undefined when it may. */
export function addressRefusal(address: string, port: number, policy: DestinationPolicy): string | undefined {
  const plain = unmapped(address);
  if (inList(LOOPBACK, plain) && policy.ownPorts.has(port)) return `${plain}:${port} is this service's own listener`;
  const internal = internalClass(plain);
  if (internal === undefined) return undefined;
  if (policy.allowed.length > 0 && inList(rangeList(policy.allowed), plain)) return undefined;
  return `${plain} is ${internal} (allow internal receivers with webhooks.allowedDestinations)`;
}

/**
 * The BlockList the socket itself enforces for a connection to `address` (Node refuses a blocked address
 * before any packet is sent): every internal range, unless `address` is one the operator allowed — then none.
 */
export function socketBlockList(address: string, policy: DestinationPolicy): BlockList | undefined {
  const plain = unmapped(address);
  return policy.allowed.length > 0 && inList(rangeList(policy.allowed), plain) ? undefined : INTERNAL;
}

/** The URL's host without IPv6 brackets, and its port (the scheme's default when none). */
function hostAndPort(url: URL): { host: string; port: number } {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port) };
}

function isLocalhostName(host: string): boolean {
  const lower = host.toLowerCase().replace(/\.$/, "");
  return lower === "localhost" || lower.endsWith(".localhost");
}

/** At creation: why `url` can already be seen to be refused (an IP literal, a localhost name), else undefined. */
export function staticRefusal(url: URL, policy: DestinationPolicy): string | undefined {
  const { host, port } = hostAndPort(url);
  if (isIP(host) !== 0) return addressRefusal(host, port, policy);
  if (isLocalhostName(host)) return addressRefusal("127.0.0.1", port, policy);
  return undefined;
}

/**
 * At delivery: the address to connect to — the URL's IP literal, or the first address its name resolves to —
 * or why not (every resolved address must be allowed: a name with one internal address is refused whole).
 */
export async function resolveDestination(url: URL, policy: DestinationPolicy): Promise<{ address: ResolvedAddress } | { refused: string }> {
  const { host, port } = hostAndPort(url);
  const family = isIP(host);
  let addresses: readonly ResolvedAddress[];
  if (family !== 0) addresses = [{ address: host, family: family as 4 | 6 }];
  else if (isLocalhostName(host)) addresses = [{ address: "127.0.0.1", family: 4 }];
  else {
    try {
      addresses = await policy.resolve(host);
    } catch (error) {
      const code = (error as { code?: string }).code;
      return { refused: `host not found${code ? ` (${code})` : ""}` };
    }
    if (addresses.length === 0) return { refused: "host not found" };
  }
  for (const a of addresses) {
    const refusal = addressRefusal(a.address, port, policy);
    if (refusal !== undefined) return { refused: `destination refused: ${refusal}` };
  }
  return { address: addresses[0]! };
}
