/**
 * The client address of a request on the public listener: the one place it is derived, for the application
 * and claim rate limits and for keys' IP allowlists (keyAccess.ts).
 *
 * The service listens on loopback, so a deployment has a reverse proxy in front and every connection comes
 * from it. With `trustedProxies` configured (addresses or CIDR ranges), a connection from one of them has its
 * `X-Forwarded-For` believed: the header is read from the right (the entry the nearest proxy appended) and
 * the first address that is not itself a trusted proxy is the client. Entries left of that one are the
 * client's own claims and are never used. A malformed entry stops the walk: the last trusted hop is the
 * answer. A connection from any other address is its own client address, whatever headers it sends.
 *
 * Bounds per client (rate limits of the public doors, the per-client bound on open sponsorships, console
 * sign-in attempts) count a client by clientBucket: one IPv6 client holds a whole /64 at least (RFC 6177), so
 * counting its single addresses would give it 2^64 buckets. Keys' IP allowlists judge the exact address.
 */
import { BlockList, isIP } from "node:net";
import { inNetwork, ipv4At, ipv6Bytes, ipv6Text, networkOf } from "./ipv6.ts";

/** "::ffff:127.0.0.1" (IPv4 on a dual-stack socket) -> "127.0.0.1"; undefined when not an address. */
export function plainIp(ip: string): string | undefined {
  const trimmed = ip.trim();
  const plain = trimmed.startsWith("::ffff:") && isIP(trimmed.slice(7)) === 4 ? trimmed.slice(7) : trimmed;
  return isIP(plain) === 0 ? undefined : plain;
}

/** A BlockList of CIDR ranges ("10.0.0.0/8", "::1/128"), as validIpRange normalises them. */
export function rangeList(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const range of ranges) {
    const [address, prefix] = range.split("/");
    list.addSubnet(address!, Number(prefix), isIP(address!) === 6 ? "ipv6" : "ipv4");
  }
  return list;
}

export function inList(list: BlockList, ip: string): boolean {
  return list.check(ip, isIP(ip) === 6 ? "ipv6" : "ipv4");
}

/** Built once per configured list (the configuration does not change while the service runs). */
const lists = new WeakMap<readonly string[], BlockList>();

/** `trustedProxies` as a BlockList, built once per list. */
function trustedList(trustedProxies: readonly string[]): BlockList {
  let trusted = lists.get(trustedProxies);
  if (trusted === undefined) lists.set(trustedProxies, (trusted = rangeList(trustedProxies)));
  return trusted;
}

/** Whether the connection from `socketAddress` is one of `trustedProxies`' (what it says of the request is believed). */
export function fromTrustedProxy(socketAddress: string, trustedProxies: readonly string[] | undefined): boolean {
  const peer = plainIp(socketAddress);
  return peer !== undefined && trustedProxies !== undefined && trustedProxies.length > 0 && inList(trustedList(trustedProxies), peer);
}

/**
 * The client address of a connection from `socketAddress` that carries `forwardedFor` (the X-Forwarded-For
 * header, "" when absent), believing only `trustedProxies`.
 */
export function clientAddress(socketAddress: string, forwardedFor: string, trustedProxies: readonly string[] | undefined): string {
  const peer = plainIp(socketAddress);
  if (peer === undefined || !fromTrustedProxy(peer, trustedProxies)) return peer ?? socketAddress;
  const trusted = trustedList(trustedProxies!);
  let client = peer;
  const hops = forwardedFor === "" ? [] : forwardedFor.split(",");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plainIp(hops[i]!);
    if (hop === undefined) break;
    client = hop;
    if (!inList(trusted, hop)) break;
  }
  return client;
}

/** A request's client address, from what both the Koa context and the plain exchange offer. */
export function requestClientAddress(request: { ip: string; get(field: string): string }, trustedProxies: readonly string[] | undefined): string {
  return clientAddress(request.ip, trustedProxies === undefined ? "" : request.get("x-forwarded-for"), trustedProxies);
}

/** IPv6 clients are counted per /64 unless configured (`ipv6ClientPrefix`). */
export const DEFAULT_IPV6_CLIENT_PREFIX = 64;

const MAPPED_PREFIX = ipv6Bytes("::ffff:0:0")!;

/**
 * The key every per-client bound counts `address` under: an IPv4 address as it is (an IPv4-mapped IPv6 one,
 * "::ffff:10.0.0.1" or "::ffff:a00:1", as its IPv4 address), an IPv6 address as its network of `ipv6Prefix` bits
 * ("2001:db8:1:2::/64"); anything else as it is. Pure.
 */
export function clientBucket(address: string, ipv6Prefix: number = DEFAULT_IPV6_CLIENT_PREFIX): string {
  const plain = plainIp(address);
  if (plain !== undefined && isIP(plain) === 4) return plain;
  const bytes = ipv6Bytes(address);
  if (bytes === undefined) return plainIp(address) ?? address;
  if (inNetwork(bytes, MAPPED_PREFIX, 96)) return ipv4At(bytes, 12);
  return `${ipv6Text(networkOf(bytes, ipv6Prefix))}/${ipv6Prefix}`;
}
