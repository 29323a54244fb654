/**
 * IPv6 addresses as their 16 bytes, for what Node's net module does not offer: the network of a client address
 * (clientAddress.ts clientBucket) and the IPv4 address some IPv6 forms carry (webhooks/destination.ts). Pure.
 */
import { isIP } from "node:net";

/** The 16 bytes of an IPv6 address ("2001:db8::1", "::ffff:10.0.0.1", a zone "%eth0" ignored); undefined otherwise. */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  const plain = address.trim().replace(/%.*$/, "");
  if (isIP(plain) !== 6) return undefined;
  let text = plain.toLowerCase();
  // A trailing dotted quad is the last two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const groups = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":"));
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 255;
  });
  return bytes;
}

/** The canonical (RFC 5952: lower case, the first longest run of two or more zero groups as "::") text of 16 bytes. */
export function ipv6Text(bytes: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  let runStart = -1;
  let runLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > runLength) [runStart, runLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (part: number[]) => part.map((g) => g.toString(16)).join(":");
  return runStart < 0 ? hex(groups) : `${hex(groups.slice(0, runStart))}::${hex(groups.slice(runStart + runLength))}`;
}

/** The dotted IPv4 address of the 4 bytes at `offset`, each XOR `mask` (Teredo obfuscates its client's). */
export function ipv4At(bytes: Uint8Array, offset: number, mask = 0): string {
  return [0, 1, 2, 3].map((i) => (bytes[offset + i]! ^ mask) & 255).join(".");
}

/** `bytes` with every bit after the first `length` cleared: the /length network. */
export function networkOf(bytes: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(16);
  for (let bit = 0; bit < length; bit += 8) out[bit / 8] = bytes[bit / 8]! & (length - bit >= 8 ? 255 : (255 << (8 - (length - bit))) & 255);
  return out;
}

/** Whether `bytes` are in the network `prefix`/`length`. */
export function inNetwork(bytes: Uint8Array, prefix: Uint8Array, length: number): boolean {
  const a = networkOf(bytes, length);
  const b = networkOf(prefix, length);
  return a.every((byte, i) => byte === b[i]);
}
