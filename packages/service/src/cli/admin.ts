/**
 * Admin commands against the service's store (the same configuration and environment as the service):
 *
 *   pnpm --filter @paymaster/service admin -- credit --network <name> --sender 0x… --wei <amount> [--reference <id>] [--config <file>]
 *   pnpm --filter @paymaster/service admin -- tank --network <name> --sender 0x… [--config <file>]
 *
 * `credit` adds to a sender's gas tank by hand; `--reference` makes it idempotent (default: a new
 * "admin:<uuid>" each time). Without a configuration (no --config, no PAYMASTER_CONFIG) the commands use the
 * embedded stack's SQLite file (.data/embedded/paymaster.sqlite, or --database <file>) and network "local".
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { getAddress, isAddress } from "viem";
import type { Address } from "@paymaster/shared";
import { ConfigError, loadConfig } from "../config/load.ts";
import { openStore } from "../store/index.ts";
import type { GasTank } from "../store/types.ts";

export const USAGE = `usage:
  admin credit --network <name> --sender <address> --wei <amount> [--reference <id>] [--config <file>]
  admin tank   --network <name> --sender <address> [--config <file>]
without a configuration: the embedded stack's database (--database <file>, default .data/embedded/paymaster.sqlite)`;

export const EMBEDDED_DATABASE_PATH = ".data/embedded/paymaster.sqlite";

export class UsageError extends Error {}

interface Parsed {
  command: "credit" | "tank";
  flags: Map<string, string>;
}

const FLAGS: Record<Parsed["command"], readonly string[]> = {
  credit: ["network", "sender", "wei", "reference", "config", "database"],
  tank: ["network", "sender", "config", "database"],
};

function parse(argv: readonly string[]): Parsed {
  const args = argv[0] === "--" ? argv.slice(1) : [...argv];
  const command = args.shift();
  if (command !== "credit" && command !== "tank") throw new UsageError(command === undefined ? "no command" : `unknown command "${command}"`);
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new UsageError(`unexpected argument "${arg}"`);
    const name = match[1]!;
    if (!FLAGS[command].includes(name)) throw new UsageError(`${command}: unknown option --${name}`);
    const value = match[2] ?? args[++i];
    if (value === undefined || value === "") throw new UsageError(`--${name} needs a value`);
    flags.set(name, value);
  }
  return { command, flags };
}

function required(flags: Map<string, string>, name: string): string {
  const value = flags.get(name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function tankJson(network: string, tank: GasTank) {
  return {
    network,
    sender: tank.sender,
    balanceWei: tank.balanceWei.toString(),
    reservedWei: tank.reservedWei.toString(),
    availableWei: (tank.balanceWei - tank.reservedWei).toString(),
  };
}

/** Runs one admin command; returns what to print (JSON). Throws UsageError / ConfigError on bad input. */
export async function runAdmin(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const { command, flags } = parse(argv);
  const network = required(flags, "network");
  const senderText = required(flags, "sender");
  if (!isAddress(senderText, { strict: false })) throw new UsageError(`--sender: not an address: ${senderText}`);
  const sender = getAddress(senderText) as Address;
  let wei = 0n;
  if (command === "credit") {
    const text = required(flags, "wei");
    if (!/^\d+$/.test(text) || BigInt(text) === 0n) throw new UsageError(`--wei: must be a positive integer amount of wei, not ${text}`);
    wei = BigInt(text);
  }

  const configArgv = flags.has("config") ? ["--config", flags.get("config")!] : [];
  const config = await loadConfig({ argv: configArgv, env });
  let storeConfig: { databasePath: string; databaseUrl?: string };
  if (config === undefined) {
    if (network !== "local") throw new UsageError(`without a configuration only network "local" (the embedded stack) is known`);
    const databasePath = path.resolve(flags.get("database") ?? EMBEDDED_DATABASE_PATH);
    if (!existsSync(databasePath)) throw new UsageError(`no database at ${databasePath} (is the embedded stack running? else give --config)`);
    storeConfig = { databasePath };
  } else {
    if (flags.has("database")) throw new UsageError("--database is for the embedded stack only (the configuration names the database)");
    if (!config.networks.some((n) => n.name === network)) {
      throw new UsageError(`network "${network}" is not configured (configured: ${config.networks.map((n) => n.name).join(", ")})`);
    }
    storeConfig = config;
  }

  const store = await openStore(storeConfig);
  try {
    if (command === "tank") return tankJson(network, await store.getGasTank(network, sender));
    const reference = flags.get("reference") ?? `admin:${randomUUID()}`;
    const tank = await store.creditGasTank(network, sender, wei, reference);
    return { credited: wei.toString(), reference, ...tankJson(network, tank) };
  } finally {
    await store.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    console.log(JSON.stringify(await runAdmin(process.argv.slice(2), process.env), null, 2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`admin: ${error.message}\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    console.error("admin:", error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
