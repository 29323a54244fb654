/**
 * The network configuration of the embedded local chain, built from the deployment manifest (no file, no
 * environment): every EntryPoint version with its paymasters, the manifest's test tokens at fixed prices,
 * the default gas caps, and the manifest's GasTankDeposit as the deposit contract.
 */
import type { DeploymentManifest } from "@paymaster/contracts/manifest";
import type { Hex } from "@paymaster/shared";
import { privateKeyToAddress } from "viem/accounts";

import { ConfigError } from "./errors.ts";
import { deepFreeze, formatPath, parseNetworkConfig } from "./schema.ts";
import { DEFAULT_GAS_CAPS, type NetworkConfig } from "./types.ts";
import { SPONSOR_VERSIONS } from "../wire/schemas.ts";

/** USD prices of the local test tokens; a test token not listed here is priced as a dollar stablecoin. */
export const LOCAL_TOKEN_USD_PRICES: Readonly<Record<string, string>> = Object.freeze({ USDC: "1.00", DAI: "1.00" });
export const LOCAL_DEFAULT_TOKEN_USD_PRICE = "1.00";
export const LOCAL_TOKEN_MARKUP_BPS = 500;
export const LOCAL_NATIVE_USD_PRICE = "3000.00";
/**
 * RPC timeout and deadline for the local chain (production defaults: 1000 / 1500 ms). It runs in the service's
 * process or beside it on the same machine: it cannot hang on its own, but it shares the CPU with the service
 * (and with a bundler and tests hammering it), so a busy moment is waited for instead of taken for an outage.
 */
export const LOCAL_RPC_TIMEOUT_MS = 10_000;

export interface LocalNetworkOptions {
  manifest: DeploymentManifest;
  /** The local chain's JSON-RPC URL. */
  rpcUrl: string;
  /** The paymasters' signer (must be one of the manifest's signers). */
  signerKey: Hex;
}

/** The "local" network for the embedded stack. Throws `ConfigError` if the inputs do not make a valid network. */
export function localNetworkConfig({ manifest, rpcUrl, signerKey }: LocalNetworkOptions): NetworkConfig {
  const parsed = parseNetworkConfig({
    name: "local",
    chainId: manifest.chainId,
    rpcUrl,
    rpcTimeoutMs: LOCAL_RPC_TIMEOUT_MS,
    rpcDeadlineMs: LOCAL_RPC_TIMEOUT_MS,
    entryPoints: Object.fromEntries(
      SPONSOR_VERSIONS.map((version) => {
        const ep = manifest.entryPoints[version];
        return [
          version,
          { entryPoint: ep.entryPoint, verifyingPaymaster: ep.verifyingPaymaster, erc20Paymaster: ep.erc20Paymaster },
        ];
      }),
    ),
    signerKeys: [signerKey],
    tokens: manifest.tokens.map((token) => ({
      symbol: token.symbol,
      address: token.address,
      decimals: token.decimals,
      priceSource: { type: "fixed", usd: LOCAL_TOKEN_USD_PRICES[token.symbol] ?? LOCAL_DEFAULT_TOKEN_USD_PRICE },
      markupBps: LOCAL_TOKEN_MARKUP_BPS,
    })),
    nativeUsdPrice: { type: "fixed", usd: LOCAL_NATIVE_USD_PRICE },
    depositContract: manifest.gasTankDeposit,
    caps: {
      maxVerificationGasLimit: DEFAULT_GAS_CAPS.maxVerificationGasLimit.toString(),
      maxCallGasLimit: DEFAULT_GAS_CAPS.maxCallGasLimit.toString(),
      maxPreVerificationGas: DEFAULT_GAS_CAPS.maxPreVerificationGas.toString(),
      maxPaymasterVerificationGasLimit: DEFAULT_GAS_CAPS.maxPaymasterVerificationGasLimit.toString(),
      maxPaymasterPostOpGasLimit: DEFAULT_GAS_CAPS.maxPaymasterPostOpGasLimit.toString(),
      maxFeeMultiplierBps: DEFAULT_GAS_CAPS.maxFeeMultiplierBps,
    },
  });
  if (!parsed.ok) {
    throw new ConfigError(
      parsed.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`),
      "embedded local network",
    );
  }
  const signer = privateKeyToAddress(parsed.value.signerKeys[0]!);
  if (!manifest.signers.some((s) => s.toLowerCase() === signer.toLowerCase())) {
    throw new ConfigError(
      [`signerKey: its address ${signer} is not among the manifest's paymaster signers (${manifest.signers.join(", ")})`],
      "embedded local network",
    );
  }
  return deepFreeze(parsed.value);
}
