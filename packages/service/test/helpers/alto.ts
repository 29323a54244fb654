// @pimlico/alto, a real ERC-4337 bundler, as a child process for the tests that run inside a loopback-only
// network namespace (scripts/netns-test.sh): alto binds every interface, so it is never started elsewhere.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { networkInterfaces } from "node:os";
import path from "node:path";

/** Only the loopback interface exists (a fresh network namespace). */
export function onlyLoopback(): boolean {
  const names = Object.keys(networkInterfaces());
  return names.length > 0 && names.every((name) => name === "lo");
}

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

async function waitForAlto(url: string, entryPoints: number, alto: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (alto.exitCode !== null) throw new Error(`alto exited with ${alto.exitCode}:\n${log()}`);
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
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`alto did not come up within 60 s:\n${log()}`);
}

/** Starts alto against `rpcUrl` (safe mode off: Hardhat has no JS tracer) and waits until it answers. */
export async function startAlto(options: { rpcUrl: string; entryPoints: string[]; executorKey: string; utilityKey: string }): Promise<{ alto: ChildProcess; url: string }> {
  if (!onlyLoopback()) {
    throw new Error(`alto must run inside a loopback-only network namespace (found interfaces: ${Object.keys(networkInterfaces()).join(", ")}); use scripts/netns-test.sh`);
  }
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    altoEntry(),
    "--entrypoints", options.entryPoints.join(","),
    "--executor-private-keys", options.executorKey,
    "--utility-private-key", options.utilityKey,
    "--rpc-url", options.rpcUrl,
    "--port", String(port),
    "--safe-mode", "false",
    // The API Pimlico serves (api.pimlico.io/v2/…): v1, alto's default, skips the preVerificationGas and gas price checks.
    "--default-api-version", "v2",
    // The local chains run Prague's rules or later (EIP-7623's calldata floor included).
    "--supports-eip7623", "true",
    "--block-time", "250",
    "--min-bundle-interval", "100",
    "--max-bundle-interval", "250",
    "--utility-wallet-monitor", "false",
    "--refilling-wallets", "false",
    "--log-level", process.env.ALTO_LOG_LEVEL ?? "warn",
  ];
  let log = "";
  const alto = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
  const append = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
    if (process.env.ALTO_LOG_LEVEL) process.stderr.write(chunk);
  };
  alto.stdout!.on("data", append);
  alto.stderr!.on("data", append);
  try {
    await waitForAlto(url, options.entryPoints.length, alto, () => log);
  } catch (error) {
    alto.kill("SIGKILL");
    throw error;
  }
  return { alto, url };
}

/** Stops a child process: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess | undefined, graceMs = 5_000): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

export const stopAlto = (alto: ChildProcess | undefined): Promise<void> => stopChild(alto);
