// A TCP proxy on 127.0.0.1 between the service and a chain RPC, for real network faults:
//   "pass"    forwards both ways;
//   "hang"    accepts connections and reads, but nothing goes through either way (a node that never answers),
//             including on connections opened before;
//   "refuse"  nothing listens on the port (connections are refused); open connections are cut.
// The port stays the same across modes, so the service's URL does not change. `setDelay(ms)`: in "pass", every
// chunk is held that long each way (a node farther away: each round trip grows by twice that). `hangAfter` arms a
// fault at an exact moment: once the client has sent some bytes (a PostgreSQL COMMIT, say) they are forwarded and
// then nothing more goes through either way — the server acted on them, and the client never hears.
// `roundTrips()` counts, over every connection, the client's turns: a chunk from the client after the server
// answered (or the first on a connection) starts one; chunks the client sends before any answer (a pipeline) do
// not. What the benches print as round trips to the database, counted on the wire.
import { createServer, connect, type Server, type Socket } from "node:net";

export type ProxyMode = "pass" | "hang" | "refuse";

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  mode(): ProxyMode;
  setMode(mode: ProxyMode): Promise<void>;
  /** Holds each chunk `ms` before passing it on, each way (0: none). */
  setDelay(ms: number): void;
  /** Round trips so far (see above); `reset` starts the count again. */
  roundTrips(reset?: boolean): number;
  /** Switches to "hang" right after forwarding the `count`-th client chunk containing `pattern`; resolves then. */
  hangAfter(pattern: string, count?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, initial: ProxyMode = "pass"): Promise<TcpProxy> {
  let mode: ProxyMode = initial;
  let delayMs = 0;
  let turns = 0;
  let trigger: { pattern: Buffer; left: number; fired: () => void } | undefined;
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
    const upstream = connect({ host: target.host, port: target.port, noDelay: true });
    // As the two ends do (pg, PostgreSQL and HTTP servers set TCP_NODELAY): held-back small writes would add the
    // peer's delayed-ACK wait (40 ms) to exchanges that no real network between them has.
    client.setNoDelay(true);
    track(upstream);
    // Data moves only in "pass": in "hang" it is swallowed, so an exchange never completes. Equal holds keep
    // the chunks in order (timers of one delay fire in the order they were set).
    const pass = (to: Socket, chunk: Buffer) => {
      if (mode !== "pass") return;
      if (delayMs === 0) to.write(chunk);
      else setTimeout(() => mode === "pass" && !to.destroyed && to.write(chunk), delayMs);
    };
    let answered = true; // the server has spoken since the client's last chunk (a connection starts with a turn)
    client.on("data", (chunk: Buffer) => {
      if (answered) turns++;
      answered = false;
      if (mode === "pass" && trigger && chunk.includes(trigger.pattern) && --trigger.left === 0) {
        // The armed chunk goes through at once (whatever the delay), and then nothing more.
        upstream.write(chunk);
        mode = "hang";
        trigger.fired();
        trigger = undefined;
        return;
      }
      pass(upstream, chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      answered = true;
      pass(client, chunk);
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
    setDelay(ms) {
      delayMs = ms;
    },
    roundTrips(reset = false) {
      const n = turns;
      if (reset) turns = 0;
      return n;
    },
    async setMode(next) {
      if (next === "refuse" && server) await unlisten();
      if (next !== "refuse" && !server) await listen();
      mode = next;
    },
    hangAfter(pattern, count = 1) {
      return new Promise<void>((fired) => (trigger = { pattern: Buffer.from(pattern), left: count, fired }));
    },
    close: unlisten,
  };
}
