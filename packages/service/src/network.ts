/**
 * Builds a configured network's runtime at start-up, with pre-flight checks that fail closed: the RPC
 * answers with the configured chain id, every EntryPoint and paymaster has code, the signer is accepted by
 * every paymaster, and the ERC-20 paymasters' postOpGas and minPostOpGasLimit are read once.
 */
import { decodeFunctionResult, encodeFunctionData, type Abi } from "viem";
import { ERC20PaymasterV06Artifact, VerifyingPaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import { ENTRY_POINT_VERSIONS, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import type { NetworkConfig } from "./config/types.ts";
import type { NetworkChain, NetworkRuntime } from "./context.ts";
import { createChainRpc, type ChainRpc } from "./chain/rpc.ts";
import { createMarket } from "./chain/market.ts";
import { createPriceOracle } from "./sponsor/price.ts";
import { createSigner } from "./signer/signer.ts";

// Both versions share the admin/view ABI (PaymasterBase, TokenChargeBase).
const verifyingAbi = VerifyingPaymasterV06Artifact.abi as Abi;
const erc20Abi = ERC20PaymasterV06Artifact.abi as Abi;

async function view<T>(rpc: ChainRpc, to: Address, abi: Abi, functionName: string, args: unknown[] = []): Promise<T> {
  const data = encodeFunctionData({ abi, functionName, args });
  const output = await rpc.request<Hex>("eth_call", [{ to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: output }) as T;
}

/** The runtime of a network without chain access (pure configuration view). */
export function configView(config: NetworkConfig): Omit<NetworkRuntime, "chain"> {
  const versions = ENTRY_POINT_VERSIONS.filter((v) => config.entryPoints[v] !== undefined);
  return { config, versions, entryPoint: (version: EntryPointVersion) => config.entryPoints[version] };
}

export async function createNetworkRuntime(
  config: NetworkConfig,
  { pollMs = 1000 }: { pollMs?: number } = {},
): Promise<NetworkRuntime> {
  const rpc = createChainRpc(config.rpcUrl);
  const chainId = Number(BigInt(await rpc.request<string>("eth_chainId", [])));
  if (chainId !== config.chainId) {
    throw new Error(`network ${config.name}: the RPC endpoint serves chain ${chainId}, configured ${config.chainId}`);
  }
  const signer = createSigner(config.signerKeys[0]!);
  const base = configView(config);
  const erc20: NetworkChain["erc20"] = {};
  for (const version of base.versions) {
    const entry = config.entryPoints[version]!;
    for (const [label, address] of Object.entries(entry)) {
      const code = await rpc.request<string>("eth_getCode", [address, "latest"]);
      if (code === "0x") throw new Error(`network ${config.name} ${version}: ${label} ${address} has no code`);
    }
    for (const paymaster of [entry.verifyingPaymaster, entry.erc20Paymaster]) {
      if (!(await view<boolean>(rpc, paymaster, verifyingAbi, "isSigner", [signer.address]))) {
        throw new Error(`network ${config.name} ${version}: signer ${signer.address} is not accepted by paymaster ${paymaster}`);
      }
    }
    erc20[version] = {
      postOpGas: await view<bigint>(rpc, entry.erc20Paymaster, erc20Abi, "postOpGas"),
      minPostOpGasLimit: await view<bigint>(rpc, entry.erc20Paymaster, erc20Abi, "minPostOpGasLimit"),
    };
  }
  const chain: NetworkChain = {
    rpc,
    market: createMarket(rpc, { pollMs, maxAgeMs: pollMs * 2 }),
    prices: createPriceOracle(rpc),
    signer,
    erc20,
  };
  return { ...base, chain };
}
