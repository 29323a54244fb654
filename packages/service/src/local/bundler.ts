/**
 * The local stack's ERC-4337 bundler: @pimlico/alto as a child process on the local chain, serving EntryPoint
 * v0.6, v0.7 and v0.8 (EIP-7702 senders included), bound to 127.0.0.1 only.
 *
 * Alto listens on 0.0.0.0 and has no option to change it, so it runs with preload/loopbackOnly.mjs, which
 * makes every server of its process bind 127.0.0.1; once it answers, the kernel's socket table is checked
 * (Linux) and a bundler listening beyond loopback is killed and the start fails. It gets a clean environment
 * (no SENTRY_DSN, no ALTO_* of the caller's) and its own empty working folder (alto reads a .env from there),
 * and its keys (dev keys of the local chain) through its ALTO_* variables, never its argv. It exits when this
 * process goes away, however (the preload sees itself orphaned).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freeLoopbackPort, tcpListeners } from "./ports.ts";

export interface LocalBundlerOptions {
  /** The local chain's RPC URL. */
  rpcUrl: string;
  entryPoints: readonly string[];
  /** Dev keys of the local chain: the executor sends the bundles, the utility key deploys alto's simulation contracts. */
  executorKey: string;
  utilityKey: string;
  /** 0 or absent: a free port. */
  port?: number;
  /** Alto's log level (default "warn"); its output is kept and shown when it fails to start. */
  logLevel?: string;
  /** How long to wait for it to answer (default 60 s). */
  startTimeoutMs?: number;
}

export interface LocalBundler {
  url: string;
  port: number;
  child: ChildProcess;
  /** Stops it (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** The installed @pimlico/alto package folder (its exports hide package.json: found from its main entry). */
export function altoPackageDir(): string {
  const require = createRequire(import.meta.url);
  let dir = path.dirname(require.resolve("@pimlico/alto"));
  const isAlto = (d: string) => existsSync(path.join(d, "package.json")) && JSON.parse(readFileSync(path.join(d, "package.json"), "utf8")).name === "@pimlico/alto";
  while (!isAlto(dir)) {
    if (path.dirname(dir) === dir) throw new Error("@pimlico/alto's package folder not found");
    dir = path.dirname(dir);
  }
  return dir;
}

function altoEntry(): string {
  const dir = altoPackageDir();
  const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { bin: Record<string, string> };
  return path.join(dir, pkg.bin.alto!);
}

/** preload/loopbackOnly.mjs, from src/local or dist/local alike. */
export const LOOPBACK_PRELOAD = fileURLToPath(new URL("../../preload/loopbackOnly.mjs", import.meta.url));

/** Stops a child process: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess | undefined, graceMs = 5_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

async function waitUntilServing(url: string, entryPoints: number, child: ChildProcess, deadline: number, log: () => string): Promise<void> {
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the bundler (alto) exited with ${child.exitCode}:\n${log()}`);
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_supportedEntryPoints", params: [] }),
      });
      if (response.ok) {
        const json = (await response.json()) as { result?: string[] };
        if (Array.isArray(json.result) && json.result.length === entryPoints) return;
      }
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the bundler (alto) did not answer within the start timeout:\n${log()}`);
}

/** The environment alto gets: enough to run node, its keys, nothing else of ours. */
function altoEnvironment(options: LocalBundlerOptions): NodeJS.ProcessEnv {
  const keep = ["PATH", "HOME", "TMPDIR", "LANG", "SystemRoot"];
  return {
    ...Object.fromEntries(keep.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]])),
    ALTO_EXECUTOR_PRIVATE_KEYS: options.executorKey,
    ALTO_UTILITY_PRIVATE_KEY: options.utilityKey,
  };
}

/** Starts alto on the local chain, bound to 127.0.0.1, and waits until it serves every EntryPoint. */
export async function startLocalBundler(options: LocalBundlerOptions): Promise<LocalBundler> {
  const port = options.port || (await freeLoopbackPort());
  const url = `http://127.0.0.1:${port}`;
  const workDir = await mkdtemp(path.join(tmpdir(), "paymaster-alto-"));
  const args = [
    "--import", LOOPBACK_PRELOAD,
    altoEntry(),
    "--entrypoints", options.entryPoints.join(","),
    "--rpc-url", options.rpcUrl,
    "--port", String(port),
    // The local chain (Hardhat EDR) has no JS tracer.
    "--safe-mode", "false",
    // The API Pimlico serves (api.pimlico.io/v2/…): v1, alto's default, skips the preVerificationGas and gas price checks.
    "--default-api-version", "v2",
    // The local chain runs Prague's rules or later (EIP-7623's calldata floor included).
    "--supports-eip7623", "true",
    "--block-time", "250",
    "--min-bundle-interval", "100",
    "--max-bundle-interval", "250",
    "--utility-wallet-monitor", "false",
    "--refilling-wallets", "false",
    "--log-level", options.logLevel ?? "warn",
  ];
  let log = "";
  // The preload exits the bundler when this process goes away (a killed test worker leaves no bundler behind).
  const child = spawn(process.execPath, args, { cwd: workDir, stdio: ["ignore", "pipe", "pipe"], env: { ...altoEnvironment(options), PAYMASTER_BUNDLER_EXIT_WITH_PARENT: "1" } });
  const append = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on("data", append);
  child.stderr!.on("data", append);
  const stop = async () => {
    await stopChild(child);
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    await waitUntilServing(url, options.entryPoints.length, child, Date.now() + (options.startTimeoutMs ?? 60_000), () => log);
    const beyondLoopback = tcpListeners(port)?.filter((listener) => !listener.loopback) ?? [];
    if (beyondLoopback.length > 0) {
      throw new Error(`the bundler (alto) listens beyond loopback on port ${port} (${beyondLoopback.map((l) => l.address).join(", ")}): stopped`);
    }
  } catch (error) {
    child.kill("SIGKILL");
    await stop();
    throw error;
  }
  return { url, port, child, stop };
}
