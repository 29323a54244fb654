// A tiny static server on 127.0.0.1 (port 0): another origin for the browser tests (a dapp's page, a foreign site).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface StaticServer {
  /** http://127.0.0.1:<port> */
  origin: string;
  close(): Promise<void>;
}

export async function serveFiles(files: Record<string, { type: string; body: string | Buffer }>): Promise<StaticServer> {
  const server = createServer((req, res) => {
    const file = files[new URL(req.url ?? "/", "http://x").pathname];
    if (!file) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": file.type, "cache-control": "no-store" }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
