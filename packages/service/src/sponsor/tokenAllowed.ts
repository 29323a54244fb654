/**
 * ERC-20 mode refuses a token its paymaster does not allow, before anything is reserved or signed: the
 * configuration may list a token the paymaster's allowlist lacks (configured after `paymaster deploy`, or
 * disallowed since), and every op paying with it would fail on chain (UnsupportedToken). The allowlist is read
 * once per block per (paymaster, token) — the market snapshot gives the block, so there is no extra round trip
 * per request — and concurrent requests of one block share the read.
 */
import type { Abi } from "viem";
import { ERC20PaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import type { Address } from "@paymaster/shared";
import type { TokenConfig } from "../config/types.ts";
import type { NetworkChain } from "../context.ts";
import { view } from "../network.ts";
import { RpcError } from "../rpc/errors.ts";

const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;

/** Per chain client: "<paymaster>:<token>" -> the read made at `block`. */
const reads = new WeakMap<NetworkChain, Map<string, { block: bigint; allowed: Promise<boolean> }>>();

/** Whether `paymaster` allows `token` at the latest block (cached per block). */
export async function tokenAllowedOnChain(chain: NetworkChain, paymaster: Address, token: Address): Promise<boolean> {
  const { blockNumber } = await chain.market.current();
  let perChain = reads.get(chain);
  if (perChain === undefined) reads.set(chain, (perChain = new Map()));
  const key = `${paymaster}:${token}`.toLowerCase();
  let entry = perChain.get(key);
  if (entry === undefined || entry.block !== blockNumber) {
    const read = { block: blockNumber, allowed: view<boolean>(chain.rpc, paymaster, erc20PaymasterAbi, "isSupportedToken", [token]) };
    perChain.set(key, read);
    // A failed read is not kept: the next request tries again.
    read.allowed.catch(() => perChain.get(key) === read && perChain.delete(key));
    entry = read;
  }
  return entry.allowed;
}

/** TOKEN_NOT_SUPPORTED when the network's ERC-20 paymaster does not allow `token`. */
export async function requireTokenAllowed(chain: NetworkChain, network: string, paymaster: Address, token: TokenConfig): Promise<void> {
  if (await tokenAllowedOnChain(chain, paymaster, token.address)) return;
  throw new RpcError(
    "TOKEN_NOT_SUPPORTED",
    `Token ${token.symbol} is configured on ${network} but its ERC-20 paymaster ${paymaster} does not allow it (every op paying with it would fail on chain): the operator allows it with \`paymaster token allow ${token.symbol} --network ${network}\``,
    { token: token.symbol, address: token.address, paymaster },
  );
}
