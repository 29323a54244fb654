// A TCP proxy on 127.0.0.1 between the service and a chain RPC, for real network faults:
//   "pass"    forwards both ways;
//   "hang"    accepts connections and reads, but nothing goes through either way (a node that never answers),
//             including on connections opened before;
//   "refuse"  nothing listens on the port (connections are refused); open connections are cut.
// The port stays the same across modes, so the service's URL does not change.
import { createServer, connect, type Server, type Socket } from "node:net";

export type ProxyMode = "pass" | "hang" | "refuse";

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  mode(): ProxyMode;
  setMode(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, initial: ProxyMode = "pass"): Promise<TcpProxy> {
  let mode: ProxyMode = initial;
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const onConnection = (client: Socket) => {
    track(client);
    const upstream = connect({ host: target.host, port: target.port });
    track(upstream);
    // Data moves only in "pass": in "hang" it is swallowed, so an exchange never completes.
    client.on("data", (chunk) => {
      if (mode === "pass") upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (mode === "pass") client.write(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  };
  const listen = async () => {
    server = createServer(onConnection);
    await new Promise<void>((resolve, reject) => {
      server!.once("error", reject);
      server!.listen({ host: "127.0.0.1", port }, () => resolve());
    });
    port = (server.address() as { port: number }).port;
  };
  const unlisten = async () => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  if (initial === "refuse") await unlisten();
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    mode: () => mode,
    async setMode(next) {
      if (next === "refuse" && server) await unlisten();
      if (next !== "refuse" && !server) await listen();
      mode = next;
    },
    close: unlisten,
  };
}
