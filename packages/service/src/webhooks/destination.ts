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
 *
 * IPv6 forms that carry an IPv4 address (second review, finding 3): an IPv4-mapped address (::ffff:a.b.c.d)
 * and a NAT64 one of the well-known prefix (64:ff9b::a.b.c.d, how an IPv6-only host with DNS64 reaches an
 * IPv4-only receiver) are judged as the IPv4 address they carry. The other forms are refused whole, whatever
 * they carry: local-use NAT64 (64:ff9b:1::/48: a site's own translator, its IPv4 at a position only the site
 * knows), and the deprecated 6to4 (2002::/16), Teredo (2001::/32), IPv4-compatible (::/96), IPv4-translated
 * (::ffff:0:0:0/96) and site-local (fec0::/10) ranges, which no receiver needs and which a host's tunnels could
 * route into IPv4 networks. An operator who does need one lists it in `webhooks.allowedDestinations`.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { inList, rangeList } from "../access/clientAddress.ts";
import { inNetwork, ipv4At, ipv6Bytes } from "../access/ipv6.ts";

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
  ["a reserved address", ["192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "2001:db8::/32"]],
  ["a multicast or broadcast address", ["224.0.0.0/4", "ff00::/8"]],
  ["a site-local address (deprecated)", ["fec0::/10"]],
  ["a local-use NAT64 address (a site's own translator)", ["64:ff9b:1::/48"]],
  ["an IPv6 transition address that may reach IPv4 hosts (6to4, Teredo, IPv4-compatible, IPv4-translated)", ["2002::/16", "2001::/32", "::/96", "::ffff:0:0:0/96"]],
];
const CLASS_LISTS: readonly [string, BlockList][] = CLASSES.map(([name, ranges]) => [name, rangeList(ranges)]);
const LOOPBACK = rangeList(["127.0.0.0/8", "::1/128"]);

/** The IPv6 prefixes whose last 32 bits are the IPv4 address an address of them stands for: mapped, NAT64 (well-known). */
const CARRIERS = [
  { name: "IPv4-mapped", prefix: ipv6Bytes("::ffff:0:0")!, text: "::ffff:" },
  { name: "NAT64", prefix: ipv6Bytes("64:ff9b::")!, text: "64:ff9b::" },
] as const;

/**
 * Every internal range, for the socket layer (send.ts): a second, independent refusal below the check above.
 * Node matches IPv4 ranges against IPv4-mapped addresses itself; the NAT64 forms of the IPv4 ranges are added.
 */
const INTERNAL = rangeList(
  CLASSES.flatMap(([, ranges]) => ranges).flatMap((range) => {
    const [address, bits] = range.split("/") as [string, string];
    return isIP(address) === 4 ? [range, `${CARRIERS[1].text}${address}/${96 + Number(bits)}`] : [range];
  }),
);

/** The address a destination is judged as: the IPv4 address an IPv4-mapped or NAT64 one carries, with how to name it. */
function judgedAs(address: string): { address: string; named: string } {
  const bytes = ipv6Bytes(address);
  const carrier = bytes && CARRIERS.find((c) => inNetwork(bytes, c.prefix, 96));
  if (!carrier) return { address, named: address };
  const ipv4 = ipv4At(bytes!, 12);
  return { address: ipv4, named: carrier.name === "NAT64" ? `${address} (NAT64 for ${ipv4})` : ipv4 };
}

/** Which internal class `address` is in, or undefined for a public address. */
export function internalClass(address: string): string | undefined {
  const judged = judgedAs(address).address;
  return CLASS_LISTS.find(([, list]) => inList(list, judged))?.[0];
}

/** Whether the operator allowed `address` (as judged) in `webhooks.allowedDestinations`. */
function allowedByOperator(address: string, policy: DestinationPolicy): boolean {
  return policy.allowed.length > 0 && inList(rangeList(policy.allowed), judgedAs(address).address);
}

/** Why `address`:`port` may not be a destination under `policy`, or undefined when it may. */
export function addressRefusal(address: string, port: number, policy: DestinationPolicy): string | undefined {
  const judged = judgedAs(address);
  if (inList(LOOPBACK, judged.address) && policy.ownPorts.has(port)) return `${judged.named}:${port} is this service's own listener`;
  const internal = internalClass(address);
  if (internal === undefined || allowedByOperator(address, policy)) return undefined;
  return `${judged.named} is ${internal} (allow internal receivers with webhooks.allowedDestinations)`;
}

/**
 * The BlockList the socket itself enforces for a connection to `address` (Node refuses a blocked address
 * before any packet is sent): every internal range, unless `address` is one the operator allowed — then none.
 */
export function socketBlockList(address: string, policy: DestinationPolicy): BlockList | undefined {
  return allowedByOperator(address, policy) ? undefined : INTERNAL;
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
