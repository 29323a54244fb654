/**
 * The benches' `--db-delay-ms`: PostgreSQL put where a managed database sits (another host in the region, a few
 * milliseconds away), as `--rpc-delay-ms` does for the chain. A TCP forwarder on 127.0.0.1 (test/helpers/tcpProxy.ts)
 * in a process of its own (its work never lands in the bench's CPU figures) holds every chunk half the delay each
 * way, and counts the round trips the client makes through it: a turn of the client after the server answered.
 * So "round trips per reservation" is counted on the wire, not inferred from latency.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";

export interface DbDistance {
  /** The database URL through the forwarder. */
  url: string;
  delayMs: number;
  /** The round trips made through it since the last reset (and resets the count when asked). */
  roundTrips(reset?: boolean): Promise<number>;
  /** A `SELECT 1` round trip through it, median of 50 (what the delay comes to, measured). */
  selectOneMs(): Promise<number>;
  close(): void;
}

/** Starts the forwarder to the server of `databaseUrl`, adding `delayMs` to every round trip. */
export async function startDbDistance(databaseUrl: string, delayMs: number): Promise<DbDistance> {
  if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > 100) throw new Error(`--db-delay-ms must be 0 to 100, got ${delayMs}`);
  const target = new URL(databaseUrl);
  const child = fork(fileURLToPath(new URL("./dbForwarder.ts", import.meta.url)), [target.hostname, target.port || "5432", String(delayMs / 2)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  process.once("exit", () => child.kill());
  const port = await answer<number>(child, { ask: "port" });
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.href,
    delayMs,
    roundTrips: (reset = false) => answer<number>(child, { ask: "roundTrips", reset }),
    async selectOneMs() {
      const client = new pg.Client({ connectionString: url.href });
      await client.connect();
      try {
        const times: number[] = [];
        for (let i = 0; i < 50; i++) {
          const started = performance.now();
          await client.query("SELECT 1");
          times.push(performance.now() - started);
        }
        return times.sort((a, b) => a - b)[25]!;
      } finally {
        await client.end();
      }
    },
    close: () => child.kill(),
  };
}

let asked = 0;
function answer<T>(child: ChildProcess, message: Record<string, unknown>): Promise<T> {
  const id = ++asked;
  return new Promise<T>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the database forwarder exited (${code})`));
    const onMessage = (reply: { id: number; value: T }) => {
      if (reply.id !== id) return;
      child.off("message", onMessage);
      child.off("exit", onExit);
      resolve(reply.value);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
    child.send({ ...message, id });
  });
}
