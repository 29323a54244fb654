/**
 * A bare HTTP forwarder on 127.0.0.1: it passes a JSON-RPC body to the chain and returns the answer, doing
 * nothing else (no parsing, no key, no policy, no signature, no store). Two uses:
 *
 * - The floor of any paymaster service that simulates through a node: bench/serve.ts runs one in our
 *   service's process; bench/erc7677.ts times the same handleOps eth_call through it and straight to the node,
 *   so the cost of the second HTTP hop alone (client -> service -> node instead of client -> node) is measured
 *   in the run it is compared in.
 * - A hosted RPC's distance (`delayMs`, the benches' `--rpc-delay-ms`): every call's round trip grows by
 *   `delayMs`, half on the way to the node (the body is held before it is sent on) and half on the way back
 *   (the answer is held before it is written), as a network between the service and a remote node would add
 *   it. With `calls` set, each call's [start, end] (when its body was read, when its answer was written;
 *   performance.now() of this process) and JSON-RPC method are appended there, for bench/criticalPath.ts.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createHttpPoster } from "../src/chain/httpPost.ts";
import type { ChainCall } from "./criticalPath.ts";

export interface ForwarderOptions {
  /** Added to every call's round trip, in ms (half each way). 0: none. */
  delayMs?: number;
  /** Where each forwarded call is recorded (none: not recorded). */
  calls?: ChainCall[];
}

const hold = (ms: number): Promise<void> => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/** The JSON-RPC method of a request body, or "batch" / "?" (the recorder's label only). */
function methodOf(body: string): string {
  if (body.trimStart().startsWith("[")) return "batch";
  return /"method"\s*:\s*"([^"]+)"/.exec(body)?.[1] ?? "?";
}

export async function startForwarder(chainUrl: string, { delayMs = 0, calls }: ForwarderOptions = {}): Promise<{ url: string; close(): Promise<void> }> {
  const poster = createHttpPoster(chainUrl);
  if (!poster) throw new Error(`forwarder: not an http(s) URL: ${chainUrl}`);
  const oneWayMs = delayMs / 2;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const start = performance.now();
      const body = Buffer.concat(chunks).toString("utf8");
      let nodeMs = 0;
      void hold(oneWayMs)
        .then(() => {
          const sent = performance.now();
          return poster.post(body).answer.finally(() => (nodeMs = performance.now() - sent));
        })
        .then(
          async (answer) => {
            await hold(oneWayMs);
            res.writeHead(answer.status, { "content-type": "application/json", "content-length": answer.body.length }).end(answer.body);
          },
          () => res.writeHead(502).end(),
        )
        .finally(() => {
          const end = performance.now();
          calls?.push({ method: methodOf(body), start, end, nodeMs, addedMs: end - start - nodeMs });
        });
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        poster.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The benches' `--rpc-delay-ms`: a recording, delaying forwarder the system under test reaches the chain through. */
export interface RpcDistance {
  url: string;
  delayMs: number;
  /** Every call the system made through it. */
  calls: ChainCall[];
  close(): Promise<void>;
}

/**
 * `--rpc-delay-ms MS` given: a forwarder to `chainUrl` adding MS to every call's round trip and recording it
 * (MS may be 0: the calls are recorded, the one extra local hop is all that is added); not given: undefined,
 * the system talks to the chain straight (the figures of earlier runs).
 */
export async function startRpcDistance(chainUrl: string, option: string | undefined): Promise<RpcDistance | undefined> {
  if (option === undefined) return undefined;
  const delayMs = Number(option);
  if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > 1000) throw new Error(`--rpc-delay-ms must be 0 to 1000, got ${option}`);
  const calls: ChainCall[] = [];
  const forwarder = await startForwarder(chainUrl, { delayMs, calls });
  return { url: forwarder.url, delayMs, calls, close: forwarder.close };
}
