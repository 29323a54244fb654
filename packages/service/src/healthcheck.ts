// The container image's HEALTHCHECK: GET /ready on the service's own host and port, read from its configuration
// exactly as the service reads it (file and environment; the embedded default's PAYMASTER_PORT when there is none).
// Exit 0 when ready, 1 otherwise with the reason on one line.
import { loadConfig } from "./config/load.ts";

const TIMEOUT_MS = 4000;

try {
  const config = await loadConfig({ argv: [], env: process.env, purpose: "admin" });
  const host = config?.host ?? "127.0.0.1";
  const port = config?.port ?? Number(process.env.PAYMASTER_PORT ?? 3000);
  const response = await fetch(`http://${host.includes(":") ? `[${host}]` : host}:${port}/ready`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const body = await response.text();
  if (response.status !== 200) {
    console.error(`not ready (${response.status}): ${body.slice(0, 500)}`);
    process.exit(1);
  }
  console.log(body.slice(0, 500));
} catch (error) {
  console.error(`not ready: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
