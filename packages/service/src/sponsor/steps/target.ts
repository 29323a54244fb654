/**
 * Step: resolve the network and mode. Decides which chain, EntryPoint and paymaster serve the request, the
 * request's clock (the later of ours and the chain's latest block), the signature's validity window, and the
 * mode (Sponsor with its strategy, ERC-20 with its token, or User Sponsor).
 * Raises CHAIN_UNAVAILABLE (the network's RPC has not answered yet), UNSUPPORTED_ENTRYPOINT_VERSION,
 * STRATEGY_NOT_FOUND and TOKEN_NOT_SUPPORTED (src/sponsor/policy.ts resolveMode).
 */
import type { Address } from "@paymaster/shared";
import { readyChain, type CallContext, type NetworkChain } from "../../context.ts";
import type { SponsorRequest } from "../../wire/schemas.ts";
import type { EntryPointConfig } from "../../config/types.ts";
import type { ChainClocks, MarketSnapshot } from "../../chain/market.ts";
import { RpcError } from "../../errors.ts";
import { chainWait } from "../../timing.ts";
import { resolveMode, type ResolvedMode } from "../policy.ts";
import { validityWindow } from "../validityWindow.ts";
import { NO_CHECK, type WindowCheck } from "../chainClock.ts";

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
  /**
   * Resolves once the chain's fresh clocks are known to fall inside `window`, throws ClockMoved when they do not
   * (src/sponsor/chainClock.ts). Awaited right before the reservation (steps/commit.ts), so the read overlaps the
   * request's chain call, whichever step makes it.
   */
  readonly clockCheck: WindowCheck;
  /**
   * The request signs (pm_sponsorUserOperation, pm_getPaymasterData): it ends in the reservation, whose batch checks
   * the gas tank's consent and an unpaid token charge (NewSponsorship.requires) in its one round trip, so neither is
   * read before. Requests that sign nothing read them.
   */
  readonly signs?: boolean;
}

export interface TargetInput {
  request: SponsorRequest;
  call: CallContext;
  /** The chain's clocks, read fresh by an earlier run of the request whose window they fell outside (src/sponsor/chainClock.ts). */
  clocks?: ChainClocks | undefined;
  /** The check of the window against the chain's fresh clocks (absent: none). */
  clockCheck?: WindowCheck | undefined;
  /** Target.signs. */
  signs?: boolean;
}

const NO_POSTOP = { postOpGas: 0n, minPostOpGasLimit: 0n } as const;

export async function resolveTarget({ request, call, clocks, clockCheck = NO_CHECK, signs = false }: TargetInput): Promise<Target> {
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
  const mode = await resolveMode(call, { ...request, sender: request.userOp.sender }, signs ? "reservation" : "read");
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
    // On the snapshot's clock, or on fresh clocks a first run read (src/sponsor/chainClock.ts).
    window: validityWindow({ wallNow: service.now(), ...(clocks ?? { chainNow: market.timestamp }), ttlSeconds: service.config.signatureTtlSeconds }),
    postOpGas: erc20.postOpGas,
    // The ERC-20 paymaster refuses a postOp gas limit below its worst-case postOp (v0.6: verificationGasLimit).
    minPostOpGasLimit: erc20.minPostOpGasLimit,
    clockCheck,
    signs,
  };
}
