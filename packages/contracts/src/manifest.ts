/**
 * The deployment manifest: every address a local (or explicitly allowed) deployment produced, as JSON.
 * Written by `deployLocalStack` callers (`writeManifest`), read by the service (`readManifest`).
 *
 * This module imports nothing but Node built-ins, ethers' address helpers and @paymaster/shared, so the service can read a
 * manifest without loading Hardhat.
 */
import { readFile } from "node:fs/promises";
import { writeJsonAtomically } from "./deploy/writeJson.ts";
import { getAddress, isAddress } from "ethers";

import { ENTRY_POINT_VERSIONS, type Address, type EntryPointVersion } from "@paymaster/shared";

export { ENTRY_POINT_VERSIONS, type Address, type EntryPointVersion };

/** Everything deployed for one EntryPoint version. */
export interface EntryPointDeployment {
  entryPoint: Address;
  simpleAccountFactory: Address;
  verifyingPaymaster: Address;
  erc20Paymaster: Address;
  /** v0.8 only: the EIP-7702 delegate implementation (Simple7702Account) a local 7702 sender points to. */
  simple7702Account?: Address;
}

/** An ERC-20 the ERC-20 paymasters accept (on a local chain: a mintable TestToken). */
export interface TokenDeployment {
  symbol: string;
  name: string;
  address: Address;
  decimals: number;
}

/** The manifest format, schema 1. */
export interface DeploymentManifest {
  schema: 1;
  /** Label of the network ("local" for the in-process chain). */
  network: string;
  chainId: number;
  /** ISO-8601 time of the deployment run that wrote this manifest. */
  deployedAt: string;
  /** Owner of the four paymasters (manages signers, tokens, treasury, deposit, stake). */
  owner: Address;
  /** Addresses accepted as sponsorship signers by all four paymasters at deployment. */
  signers: Address[];
  /** Receives the ERC-20 paymasters' token payments. */
  treasury: Address;
  entryPoints: Record<EntryPointVersion, EntryPointDeployment>;
  tokens: TokenDeployment[];
  /** The GasTankDeposit contract (owned by `owner`): its Deposited events fund gas tanks (User Sponsor mode). */
  gasTankDeposit: Address;
}

/** A manifest failed validation; `message` names the offending field. */
export class ManifestError extends Error {
  override name = "ManifestError";
}

function fail(where: string, what: string): never {
  throw new ManifestError(`invalid deployment manifest: ${where} ${what}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function address(value: unknown, where: string): Address {
  if (typeof value !== "string" || !isAddress(value)) fail(where, `is not an address (${JSON.stringify(value)})`);
  return getAddress(value) as Address;
}

function nonEmptyString(value: unknown, where: string): string {
  if (typeof value !== "string" || value.length === 0) fail(where, "must be a non-empty string");
  return value;
}

/**
 * Validates an already-parsed manifest and returns it with every address checksummed.
 * Throws `ManifestError` naming the first bad field.
 */
export function parseManifest(json: unknown): DeploymentManifest {
  if (!isRecord(json)) fail("manifest", "must be a JSON object");
  if (json.schema !== 1) fail("schema", `must be 1 (got ${JSON.stringify(json.schema)})`);
  const network = nonEmptyString(json.network, "network");
  const chainId = json.chainId;
  if (typeof chainId !== "number" || !Number.isSafeInteger(chainId) || chainId <= 0) {
    fail("chainId", "must be a positive integer");
  }
  const deployedAt = nonEmptyString(json.deployedAt, "deployedAt");
  if (Number.isNaN(Date.parse(deployedAt))) fail("deployedAt", "must be an ISO-8601 date");
  const owner = address(json.owner, "owner");
  if (!Array.isArray(json.signers) || json.signers.length === 0) fail("signers", "must be a non-empty array");
  const signers = json.signers.map((s, i) => address(s, `signers[${i}]`));
  const treasury = address(json.treasury, "treasury");

  if (!isRecord(json.entryPoints)) fail("entryPoints", "must be an object");
  const entryPoints = {} as Record<EntryPointVersion, EntryPointDeployment>;
  for (const version of ENTRY_POINT_VERSIONS) {
    const ep = json.entryPoints[version];
    const where = `entryPoints["${version}"]`;
    if (!isRecord(ep)) fail(where, "is missing");
    entryPoints[version] = {
      entryPoint: address(ep.entryPoint, `${where}.entryPoint`),
      simpleAccountFactory: address(ep.simpleAccountFactory, `${where}.simpleAccountFactory`),
      verifyingPaymaster: address(ep.verifyingPaymaster, `${where}.verifyingPaymaster`),
      erc20Paymaster: address(ep.erc20Paymaster, `${where}.erc20Paymaster`),
      ...(ep.simple7702Account === undefined ? {} : { simple7702Account: address(ep.simple7702Account, `${where}.simple7702Account`) }),
    };
  }

  if (!Array.isArray(json.tokens)) fail("tokens", "must be an array");
  const symbols = new Set<string>();
  const tokens = json.tokens.map((t: unknown, i): TokenDeployment => {
    const where = `tokens[${i}]`;
    if (!isRecord(t)) fail(where, "must be an object");
    const symbol = nonEmptyString(t.symbol, `${where}.symbol`);
    if (symbols.has(symbol)) fail(`${where}.symbol`, `duplicates ${symbol}`);
    symbols.add(symbol);
    const decimals = t.decimals;
    if (typeof decimals !== "number" || !Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
      fail(`${where}.decimals`, "must be an integer in [0, 255]");
    }
    return {
      symbol,
      name: nonEmptyString(t.name, `${where}.name`),
      address: address(t.address, `${where}.address`),
      decimals,
    };
  });

  const gasTankDeposit = address(json.gasTankDeposit, "gasTankDeposit");

  return { schema: 1, network, chainId, deployedAt, owner, signers, treasury, entryPoints, tokens, gasTankDeposit };
}

/** Reads and validates a manifest file (see `parseManifest`). */
export async function readManifest(file: string): Promise<DeploymentManifest> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ManifestError(`cannot read deployment manifest ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ManifestError(`deployment manifest ${file} is not JSON: ${(err as Error).message}`);
  }
  return parseManifest(json);
}

/** Validates `manifest` and writes it atomically (temp file + rename), creating the directory if needed. */
export async function writeManifest(file: string, manifest: DeploymentManifest): Promise<void> {
  await writeJsonAtomically(file, parseManifest(manifest));
}
