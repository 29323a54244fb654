/**
 * Step (signing methods, ERC-20 mode with the client's gas): the charge decision, the final simulation and the
 * reservation, on ONE chain call. The charge mode depends on the sender's allowance, which nothing else reads for
 * this request, and the signature covers the mode: so the op is signed for both modes, and the sponsorship probe
 * (src/chain/probe.ts) reads the sender's holdings and simulates, as the final simulation would, the op signed
 * for the mode that allowance selects (pre-charge when it covers the maximum token cost: the charge step's rule),
 * the paymaster's token balance read around it. The charge step then decides on those holdings (the same mode),
 * the simulation is judged as the final one is (landing.ts: AAxx, our signature, the calls, the charge showing),
 * and the op is reserved. Raises the charge step's, the landing's and the reserve step's errors; ProbeRefused
 * when the node took no state overrides (the pipeline then reads the holdings and simulates apart).
 */
import { ChargeMode, type Hex } from "@paymaster/shared";
import { NO_SPAN, traced, type TraceSpan } from "../../telemetry/trace.ts";
import type { GasValues } from "../op.ts";
import { runProbe, signedRun, type SenderCodeSink } from "../probe.ts";
import { chargeToken } from "./tokenCharge.ts";
import { commitSponsorship, type Committed } from "./commit.ts";
import { judgeProbedLanding } from "./landing.ts";
import type { MaxCost } from "./maxCost.ts";
import { signLanding } from "./sign.ts";
import type { Target } from "./target.ts";
import type { TokenPrice } from "./tokenPrice.ts";
import { quoteToken, type TokenQuote } from "./tokenQuote.ts";

export interface ChargeLandingInput {
  target: Target;
  /** The client's gas values, caps-checked. */
  gas: GasValues;
  cost: MaxCost;
  price: TokenPrice;
  /** Stub paymaster data of the final length (prices the maximum token cost). */
  paymasterData: Hex;
  /** Where the probe reports the sender's code (src/sponsor/steps/delegate.ts). */
  senderCode?: SenderCodeSink | undefined;
}

export interface ChargeLanded {
  committed: Committed;
  /** The charge as decided and signed. */
  token: TokenQuote;
}

export async function chargeLanding({ target, gas, cost, price, paymasterData, senderCode }: ChargeLandingInput, span: TraceSpan = NO_SPAN): Promise<ChargeLanded> {
  if (target.mode.mode !== "erc20") throw new TypeError("chargeLanding outside ERC-20 mode");
  // One quote: the charge mode changes nothing else of it (the maximum token cost is the pre-charge's either way).
  const preChargeQuote = quoteToken({ target, gas, price, chargeMode: ChargeMode.PreCharge, paymasterData });
  const maxTokenCost = preChargeQuote.maxTokenCost;
  const [preCharged, chargedInPostOp] = await Promise.all([
    signLanding({ target, gas, cost, token: preChargeQuote }),
    signLanding({ target, gas, cost, token: { ...preChargeQuote, chargeMode: ChargeMode.InPostOp } }),
  ]);
  const erc20 = { token: target.mode.token.address, preChargeFrom: maxTokenCost, preCharge: signedRun(target, preCharged) };
  const result = await runProbe(target, signedRun(target, chargedInPostOp), erc20, span, senderCode);
  const { before } = result.holdings!;
  const token = await traced(span, "step.chargeToken", chargeToken, { target, gas, price, holdings: before, paymasterData });
  // The charge step's rule is the probe's (the allowance against the maximum token cost): the mode simulated is the one decided.
  const landing = token.chargeMode === ChargeMode.PreCharge ? preCharged : chargedInPostOp;
  if (result.preCharge !== (token.chargeMode === ChargeMode.PreCharge)) throw new Error("chargeLanding: the probe simulated another charge mode than the charge step decided");
  await judgeProbedLanding({ target, op: landing, token, signed: true, result }, span);
  const committed = await traced(span, "step.commitSponsorship", commitSponsorship, { target, landing, cost, token, simulate: false });
  return { committed, token };
}

