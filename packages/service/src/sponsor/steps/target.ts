/**
 * Step: resolve the network and mode. Decides which chain, EntryPoint and paymaster serve the request, the
 * request's clock (the later of ours and the chain's latest block), the signature's validity window, and the
 * mode (Sponsor with its strategy, ERC-20 with its token, or User Sponsor).
 * Raises CHAIN_UNAVAILABLE (the network's RPC has not answered yet), UNSUPPORTED_ENTRYPOINT_VERSION,
 * STRATEGY_NOT_FOUND and TOKEN_NOT_SUPPORTED (src/sponsor/policy.ts resolveMode).
 */
import type { Address } from "@paymaster/shared";
import { readyChain, type CallContext } from "../../rpc/method.ts";
import type { NetworkChain } from "../../context.ts";
import type { SponsorRequest } from "../../rpc/schemas.ts";
import type { EntryPointConfig } from "../../config/types.ts";
import type { MarketSnapshot } from "../../chain/market.ts";
import { RpcError } from "../../rpc/errors.ts";
import { chainWait } from "../../timing.ts";
import { resolveMode, type ResolvedMode } from "../policy.ts";
import { validityWindow } from "../validityWindow.ts";

/** What every later step reads: the request, where it goes and under which mode. Never changed after this step. */
export interface Target {
  readonly request: SponsorRequest;
  readonly call: CallContext;
  readonly chain: NetworkChain;
  readonly entry: EntryPointConfig;
  /** The network's fees and latest block, as read for this request. */
  readonly market: MarketSnapshot;
  /** Seconds: the later of the service's clock and the latest block's timestamp. */
  readonly now: number;
  readonly mode: ResolvedMode;
  /** The paymaster of the mode: ERC-20 or verifying. */
  readonly paymaster: Address;
  /** The signature's validity window against both clocks (src/sponsor/validityWindow.ts). */
  readonly window: { readonly validUntil: number; readonly validAfter: number };
  /** ERC-20 mode: the paymaster's postOpGas (charged) and the lowest postOp gas limit it accepts (0 otherwise). */
  readonly postOpGas: bigint;
  readonly minPostOpGasLimit: bigint;
  /** The EIP-7702 delegate the sender runs, where known (the delegate step: its authorization, or its code). */
  readonly eip7702Delegate?: Address;
}

export interface TargetInput {
  request: SponsorRequest;
  call: CallContext;
}

const NO_POSTOP = { postOpGas: 0n, minPostOpGasLimit: 0n } as const;

export async function resolveTarget({ request, call }: TargetInput): Promise<Target> {
  const { service, network } = call;
  const chain = readyChain(network);
  const entry = network.entryPoint(request.version);
  if (!entry) {
    throw new RpcError("UNSUPPORTED_ENTRYPOINT_VERSION", `${network.config.name} does not serve EntryPoint ${request.version}`, {
      supported: network.versions,
    });
  }
  const market = await chainWait(call.timing, () => chain.market.current());
  const now = Math.max(service.now(), market.timestamp);
  const mode = await resolveMode(call, { ...request, sender: request.userOp.sender });
  const erc20 = mode.mode === "erc20" ? chain.erc20[request.version]! : NO_POSTOP;
  return {
    request,
    call,
    chain,
    entry,
    market,
    now,
    mode,
    paymaster: mode.mode === "erc20" ? entry.erc20Paymaster : entry.verifyingPaymaster,
    window: validityWindow({ wallNow: service.now(), ...(await chainWait(call.timing, () => chain.market.clocks(market))), ttlSeconds: service.config.signatureTtlSeconds }),
    postOpGas: erc20.postOpGas,
    // The ERC-20 paymaster refuses a postOp gas limit below its worst-case postOp (v0.6: verificationGasLimit).
    minPostOpGasLimit: erc20.minPostOpGasLimit,
  };
}
