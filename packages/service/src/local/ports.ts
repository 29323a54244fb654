/** Loopback ports for the local stack: free ones picked by the OS, and what listens on one (Linux). */
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

/** A port free on 127.0.0.1 right now (the OS picks it). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const LOOPBACK_V4 = /^[0-9A-F]{6}7F$/; // 127.x.x.x, little-endian hex as /proc/net/tcp writes it
const LOOPBACK_V6 = "00000000000000000000000001000000"; // ::1

/**
 * The local addresses of the TCP sockets listening on `port`, from /proc/net/tcp and /proc/net/tcp6 (hex, as the
 * kernel writes them), each with whether it is loopback; undefined where /proc is not there (not Linux).
 */
export function tcpListeners(port: number): { address: string; loopback: boolean }[] | undefined {
  const files = ["/proc/net/tcp", "/proc/net/tcp6"].filter((file) => existsSync(file));
  if (files.length === 0) return undefined;
  const found: { address: string; loopback: boolean }[] = [];
  for (const file of files) {
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (local === undefined || state !== "0A") continue; // 0A: LISTEN
      const [address, hexPort] = local.split(":");
      if (address === undefined || Number.parseInt(hexPort ?? "", 16) !== port) continue;
      found.push({ address, loopback: LOOPBACK_V4.test(address) || address === LOOPBACK_V6 });
    }
  }
  return found;
}
