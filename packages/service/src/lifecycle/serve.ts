/**
 * How the service starts from its command line (`paymaster start`, src/cli/commands/start.ts, which loads this
 * module only when it runs, so the operator commands do not pay for the service's imports): the configured
 * networks, else the embedded default; then it serves until SIGINT/SIGTERM.
 */
import { randomBytes } from "node:crypto";
import { adminApiOptionsFromEnv, DEFAULT_ADMIN_PORT, type AdminApiOptions } from "../adminApi/options.ts";
import { loadConfig, redactConfig } from "../config/load.ts";
import { banner } from "../local/banner.ts";
import { startEmbedded } from "../local/embedded.ts";
import { scrubText } from "../log.ts";
import { startService } from "../server.ts";

export interface StartIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
}

/**
 * The embedded default's console: the tokens of PAYMASTER_ADMIN_TOKENS, else one made up for this run (printed
 * once: the local stack is for development, like its demo key).
 */
function embeddedAdmin(env: NodeJS.ProcessEnv): { options: AdminApiOptions; generated?: string } {
  const configured = adminApiOptionsFromEnv(env);
  if (configured) return { options: configured };
  const token = randomBytes(24).toString("hex");
  const port = Number(env.PAYMASTER_ADMIN_PORT ?? DEFAULT_ADMIN_PORT);
  return { options: { host: "127.0.0.1", port, tokens: [{ name: "local", token }] }, generated: token };
}

/** Starts what the options say; answers how to stop it. */
export async function serve(configFile: string | undefined, watch: boolean, io: StartIo): Promise<() => Promise<void>> {
  const { env } = io;
  const config = await loadConfig({ argv: configFile === undefined ? [] : ["--config", configFile], env });
  if (config === undefined) {
    const admin = embeddedAdmin(env);
    const embedded = await startEmbedded({
      admin: admin.options,
      chainPort: Number(env.PAYMASTER_LOCAL_CHAIN_PORT ?? 8545),
      servicePort: Number(env.PAYMASTER_PORT ?? 3000),
      metricsPort: Number(env.PAYMASTER_METRICS_PORT ?? 9464),
      // The bundler on its conventional port; PAYMASTER_LOCAL_BUNDLER_PORT=off runs none.
      ...(env.PAYMASTER_LOCAL_BUNDLER_PORT === "off" ? {} : { bundler: { port: Number(env.PAYMASTER_LOCAL_BUNDLER_PORT ?? 4337) } }),
      logLevel: (env.PAYMASTER_LOG_LEVEL as "info" | undefined) ?? "info",
      ...(watch ? {} : { watch: false }),
    });
    io.out(await banner(embedded, admin.generated));
    return embedded.close;
  }
  const running = await startService(config, { ...(watch ? {} : { watch: false }), admin: adminApiOptionsFromEnv(env) });
  // A PKCS#11 network's address comes from its token (read at start-up unless the token refused).
  const tokenSigners = new Map([...running.service.networks].flatMap(([name, n]) => (n.config.pkcs11 && n.chain ? [[name, n.chain.signer.address] as const] : [])));
  io.out(JSON.stringify({ msg: "configuration", config: redactConfig(config, tokenSigners), ...(running.adminUrl ? { adminApi: running.adminUrl, console: `${running.adminUrl}/console/` } : {}) }));
  return running.close;
}

/**
 * How long a repeat of the first signal is the same request: Ctrl-C in a terminal signals the whole foreground
 * process group, and a wrapper in it (pnpm, npm) passes the same signal on to the service as well, so one Ctrl-C
 * arrives twice within milliseconds. A person's second Ctrl-C comes later.
 */
export const REPEATED_SIGNAL_MS = 1_000;

/** Drains and exits on SIGINT/SIGTERM; a second signal (after REPEATED_SIGNAL_MS) exits at once. */
export function stopOnSignals(close: () => Promise<void>, io: StartIo): void {
  let stoppingSince: number | undefined;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (stoppingSince !== undefined) {
        if (performance.now() - stoppingSince < REPEATED_SIGNAL_MS) return; // the same request, passed on by a wrapper
        process.exit(1);
      }
      stoppingSince = performance.now();
      io.out(`\n${signal}: shutting down (draining in-flight requests)`);
      close().then(
        () => process.exit(0),
        (error: unknown) => {
          io.err(`shutdown failed: ${scrubText(error instanceof Error ? error.message : String(error))}`);
          process.exit(1);
        },
      );
    });
  }
}
