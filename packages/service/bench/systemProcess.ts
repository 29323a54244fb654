/**
 * A system under test in a process of its own (bench/serve.ts), so a benchmark reads that process's CPU from
 * /proc apart from its own (the client's) and the chain's.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** What bench/serve.ts prints on its READY line (ours fills every field; the peer only url and context). */
export interface SystemReady {
  /** The standard JSON-RPC 2.0 (ERC-7677) endpoint, API key included. */
  url: string;
  context: unknown;
  /** Ours: the v1 dialect's endpoint, the metrics listener's /metrics, the signer implementation. */
  v1Url?: string;
  metricsUrl?: string;
  signer?: string;
  /** Ours: a bare forwarder to the chain in the same process (bench/forwarder.ts), the floor of a second hop. */
  forwarderUrl?: string;
}

export interface SystemProcess extends SystemReady {
  pid: number | undefined;
  stop(): void;
}

export interface SystemOptions {
  chainUrl: string;
  /** The chain URL the system itself uses (the bench's delaying forwarder); set-up calls go to chainUrl. Default: chainUrl. */
  systemChainUrl?: string;
  manifestPath: string;
  /** More environment for bench/serve.ts (BENCH_SIGNER_KEY, BENCH_DATA_DIR, BENCH_SKIP_FINAL, BENCH_ALTO_URL). */
  env?: Record<string, string>;
  /** The process writes a V8 CPU profile into this folder when it stops. */
  cpuProfDir?: string;
}

/** Starts bench/serve.ts for `system` and waits for its READY line; the process ends with this one. */
export async function startSystemProcess(system: "ours" | "peer", options: SystemOptions): Promise<SystemProcess> {
  const script = fileURLToPath(new URL("./serve.ts", import.meta.url));
  const profile = options.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(options.cpuProfDir)}`] : [];
  const child = spawn(process.execPath, [...profile, "--disable-warning=ExperimentalWarning", script], {
    env: { ...process.env, BENCH_SYSTEM: system, BENCH_CHAIN_URL: options.chainUrl, BENCH_MANIFEST: options.manifestPath, ...(options.systemChainUrl ? { BENCH_SYSTEM_CHAIN_URL: options.systemChainUrl } : {}), ...options.env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // However the bench ends (a thrown error included), the system's process ends with it.
  process.once("exit", () => child.kill("SIGINT"));
  let output = "";
  const ready = await new Promise<SystemReady>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${system} did not start: ${output}`)), 90_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = /READY (\{.*\})/.exec(output)?.[1];
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line) as SystemReady);
      }
    });
    child.on("exit", (code) => reject(new Error(`${system} exited (${code}): ${output}`)));
  });
  return { ...ready, pid: child.pid, stop: () => child.kill("SIGINT") };
}
