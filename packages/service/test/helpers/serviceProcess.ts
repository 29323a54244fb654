// The service as a real child process (`paymaster start --config <file>`, src/cli/main.ts), for tests that kill it, send
// it SIGTERM or run two replicas: its JSON log lines are collected, its URLs read from the start-up line.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { DeploymentManifest } from "@paymaster/contracts/manifest";
import { ENTRY_POINT_VERSIONS, type Hex } from "@paymaster/shared";
import { networkEnvVar } from "../../src/config/load.ts";
import { freeLoopbackPort } from "../../src/local/ports.ts";

const CLI_MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

/** A configuration file for the local chain's network (the signer key goes in the environment). */
export function writeLocalConfig(manifest: DeploymentManifest, rpcUrl: string, extra: { service?: Record<string, unknown>; network?: Record<string, unknown> } = {}): string {
  const config = {
    host: "127.0.0.1",
    port: 0,
    logLevel: "info",
    rateLimit: { perSecond: 100_000 },
    metrics: { host: "127.0.0.1", port: 0 },
    ...extra.service,
    networks: [
      {
        name: "local",
        chainId: manifest.chainId,
        rpcUrl,
        entryPoints: Object.fromEntries(
          ENTRY_POINT_VERSIONS.map((v) => [v, { entryPoint: manifest.entryPoints[v].entryPoint, verifyingPaymaster: manifest.entryPoints[v].verifyingPaymaster, erc20Paymaster: manifest.entryPoints[v].erc20Paymaster }]),
        ),
        nativeUsdPrice: { type: "fixed", usd: "3000" },
        confirmations: 1,
        pollMs: 200,
        // The chain is in the test process, sharing the CPU: wait for it (as localNetworkConfig does).
        rpcTimeoutMs: 10_000,
        rpcDeadlineMs: 10_000,
        ...extra.network,
      },
    ],
  };
  const file = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-child-")), "config.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
  /** Parsed JSON log lines so far (and plain lines as {text}). */
  lines: Record<string, any>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(predicate: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  /** kill -9 (or another signal) and wait for the exit. */
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The environment putting the embedded default (src/main.ts with no configuration) on free loopback ports. */
export async function embeddedPortsEnv(bundlerPort?: number): Promise<Record<string, string>> {
  return {
    PAYMASTER_LOCAL_CHAIN_PORT: String(await freeLoopbackPort()),
    PAYMASTER_PORT: String(await freeLoopbackPort()),
    PAYMASTER_METRICS_PORT: String(await freeLoopbackPort()),
    PAYMASTER_ADMIN_PORT: String(await freeLoopbackPort()),
    PAYMASTER_LOCAL_BUNDLER_PORT: String(bundlerPort ?? (await freeLoopbackPort())),
  };
}

/** Spawns `node <args>` and resolves once a stdout line matches `ready`, with that line (a chain process, a service). */
export function startProcess(args: string[], env: NodeJS.ProcessEnv, ready: RegExp, readyWithinMs = 60_000): Promise<{ child: ChildProcess; line: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`not ready in ${readyWithinMs / 1000} s: ${output.slice(-3000)}`));
    }, readyWithinMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((l) => ready.test(l));
      if (line) {
        clearTimeout(timer);
        resolve({ child, line, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready: ${output.slice(-3000)}`));
    });
  });
}

/** A chain in a process of its own (test/fixtures/chain.ts) with `chainId`, on a free loopback port: its URL. */
export async function startChainProcess(chainId: number, port = 0): Promise<{ child: ChildProcess; url: string }> {
  const chain = await startProcess([new URL("../fixtures/chain.ts", import.meta.url).pathname, String(chainId), String(port)], { ...process.env }, /^http:\/\/127\.0\.0\.1:\d+/);
  return { child: chain.child, url: chain.line.trim() };
}

export async function spawnService(
  configPath: string,
  env: { signerKey: Hex; databaseUrl?: string; network?: string; extra?: Record<string, string> },
  args: string[] = [],
  { cwd }: { cwd?: string } = {},
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", CLI_MAIN, "start", "--config", configPath, ...args], {
    ...(cwd === undefined ? {} : { cwd }),
    env: {
      PATH: process.env.PATH,
      [networkEnvVar(env.network ?? "local", "SIGNER_KEYS")]: env.signerKey,
      ...(env.databaseUrl ? { DATABASE_URL: env.databaseUrl } : {}),
      ...env.extra,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Record<string, any>[] = [];
  const waiters = new Set<() => void>();
  const take = (text: string) => {
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      try {
        lines.push(JSON.parse(raw));
      } catch {
        lines.push({ text: raw });
      }
    }
    for (const wake of waiters) wake();
  };
  let outBuffer = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    outBuffer += chunk.toString("utf8");
    const cut = outBuffer.lastIndexOf("\n");
    if (cut >= 0) {
      take(outBuffer.slice(0, cut));
      outBuffer = outBuffer.slice(cut + 1);
    }
  });
  child.stderr!.on("data", (chunk: Buffer) => take(chunk.toString("utf8")));
  let exitedYet = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // "close": the process is gone and its output read to the end.
    child.on("close", (code, signal) => {
      exitedYet = true;
      for (const wake of waiters) wake();
      resolve({ code, signal });
    }),
  );

  const waitFor = (predicate: (line: Record<string, any>) => boolean, timeoutMs = 30_000) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const check = () => {
        const found = lines.find(predicate);
        if (found) {
          done();
          resolve(found);
        } else if (exitedYet) {
          done();
          reject(new Error(`the service exited; its output:\n${lines.map((l) => JSON.stringify(l)).join("\n").slice(-4000)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out; the service's output:\n${lines.map((l) => JSON.stringify(l)).join("\n").slice(-4000)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  const listening = await waitFor((l) => l.msg === "paymaster service listening").catch(async (error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  return {
    child,
    url: listening.url,
    metricsUrl: listening.metricsUrl?.replace(/\/metrics$/, ""),
    lines,
    exited,
    waitFor,
    async kill(signal = "SIGKILL") {
      if (!exitedYet) child.kill(signal);
      return exited;
    },
  };
}

/** One sample of a scrape (0 when absent). */
export async function scrapeValue(metricsUrl: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}
