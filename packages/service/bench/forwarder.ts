/**
 * The floor of any paymaster service that simulates through a node: a bare HTTP server that forwards a
 * JSON-RPC body to the chain and returns the answer, doing nothing else (no parsing, no key, no policy, no
 * signature, no store). bench/serve.ts runs it in our service's process; bench/erc7677.ts times the same
 * handleOps eth_call through it and straight to the node, so the cost of the second HTTP hop alone (client ->
 * service -> node instead of client -> node) is measured in the run it is compared in.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createHttpPoster } from "../src/chain/httpPost.ts";

export async function startForwarder(chainUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const poster = createHttpPoster(chainUrl);
  if (!poster) throw new Error(`forwarder: not an http(s) URL: ${chainUrl}`);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      poster.post(Buffer.concat(chunks).toString("utf8")).answer.then(
        (answer) => res.writeHead(answer.status, { "content-type": "application/json", "content-length": answer.body.length }).end(answer.body),
        () => res.writeHead(502).end(),
      );
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
