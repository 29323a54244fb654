/**
 * What every operator command starts from: the configuration (`--config`, else PAYMASTER_CONFIG; DATABASE_URL
 * from the environment, as the service reads them) and the store it names. Without a configuration the
 * commands work on the embedded stack's database (`pnpm start` with no configuration; network "local"), or on
 * `--database <file>`. Administration never signs, so the signer keys are not needed in its environment.
 */
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { AdminContext } from "../admin/context.ts";
import { loadConfig } from "../config/load.ts";
import { openStore } from "../store/index.ts";
import { destinationPolicy, type DestinationPolicy } from "../webhooks/destination.ts";

/** The embedded stack's database (src/local/embedded.ts writes it under the service package's .data/embedded). */
export const EMBEDDED_DATABASE_PATH = fileURLToPath(new URL("../../.data/embedded/paymaster.sqlite", import.meta.url));

export class UsageError extends Error {
  override name = "UsageError";
}

export interface GlobalOptions {
  config?: string;
  database?: string;
  json?: boolean;
  /** Bring an existing database's schema up to this version's (without it: only a new database is set up). */
  migrate?: boolean;
}

/** Opens the store for one command; `close` must be called. */
export async function openAdmin(options: GlobalOptions, env: NodeJS.ProcessEnv): Promise<{ ctx: AdminContext; close(): Promise<void> }> {
  const config = await loadConfig({ argv: options.config === undefined ? [] : ["--config", options.config], env, purpose: "admin" });
  // The running service's replicas stop signing once a newer version migrates their database: a command line of a
  // newer version than the service's migrates nothing unless asked (store/migrations.ts, MigrationPolicy).
  const migrations = options.migrate === true ? "apply" : "new-only";
  let store;
  let networks: string[];
  let applicationExpiryDays: number | undefined;
  let webhookDestinations: DestinationPolicy | undefined;
  if (config === undefined) {
    const databasePath = path.resolve(options.database ?? EMBEDDED_DATABASE_PATH);
    if (env.DATABASE_URL) {
      store = await openStore({ databasePath, databaseUrl: env.DATABASE_URL }, migrations);
    } else {
      if (!existsSync(databasePath)) {
        throw new UsageError(`no database at ${databasePath}: give --config <file> (or PAYMASTER_CONFIG), or start the embedded stack (pnpm start)`);
      }
      store = await openStore({ databasePath }, migrations);
    }
    networks = ["local"];
  } else {
    if (options.database !== undefined) throw new UsageError("--database is for the embedded stack only (the configuration names the database)");
    store = await openStore(config, migrations);
    networks = config.networks.map((n) => n.name);
    applicationExpiryDays = config.applicationExpiryDays;
    const ownPorts = [config.port, config.metrics?.port].filter((port): port is number => port !== undefined && port !== 0);
    webhookDestinations = destinationPolicy({ allowed: config.webhooks?.allowedDestinations ?? [], ownPorts });
  }
  const actor = `cli:${safeUser()}`;
  const retention = config?.retention;
  // All-powerful: whoever runs the operator command holds the database (and could change it by hand), so roles
  // cannot limit it; its audit rows say admin, with the OS user as the actor.
  const role = "admin";
  return { ctx: { store, networks, actor, role, applicationExpiryDays, webhookDestinations, ...(retention === undefined ? {} : { retention }) }, close: () => store.close() };
}

function safeUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return "unknown";
  }
}
