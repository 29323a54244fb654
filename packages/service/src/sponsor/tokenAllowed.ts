/**
 * ERC-20 mode refuses a token its paymaster does not allow, before anything is reserved or signed: the
 * configuration may list a token the paymaster's allowlist lacks (configured after `paymaster deploy`, or
 * disallowed since), and every op paying with it would fail on chain (UnsupportedToken). The allowlist is kept
 * in memory per block per (paymaster, token) (src/chain/blockReads.ts: read again in the background as each
 * block is seen), so a request does not wait for it; a request whose block's read failed reads it itself.
 */
import type { Abi } from "viem";
import { ERC20PaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import type { Address } from "@paymaster/shared";
import type { TokenConfig } from "../config/types.ts";
import type { NetworkChain } from "../context.ts";
import { view } from "../network/start.ts";
import { RpcError } from "../errors.ts";

const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;

/** Whether `paymaster` allows `token` at `block` (the request's market snapshot's) or later. */
export function tokenAllowedOnChain(chain: NetworkChain, paymaster: Address, token: Address, block: bigint): Promise<boolean> {
  return chain.blockReads.value(`tokenAllowed:${paymaster}:${token}`.toLowerCase(), block, () => view<boolean>(chain.rpc, paymaster, erc20PaymasterAbi, "isSupportedToken", [token]));
}

/** TOKEN_NOT_SUPPORTED when the network's ERC-20 paymaster does not allow `token` (at `block` or later). */
export async function requireTokenAllowed(chain: NetworkChain, network: string, paymaster: Address, token: TokenConfig, block: bigint): Promise<void> {
  if (await tokenAllowedOnChain(chain, paymaster, token.address, block)) return;
  throw new RpcError(
    "TOKEN_NOT_SUPPORTED",
    `Token ${token.symbol} is configured on ${network} but its ERC-20 paymaster ${paymaster} does not allow it (every op paying with it would fail on chain): the operator allows it with \`paymaster token allow ${token.symbol} --network ${network}\``,
    { token: token.symbol, address: token.address, paymaster },
  );
}
