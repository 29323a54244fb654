/**
 * Step (signing methods only): the check that the signed op lands, then the reservation, then the decision to
 * hand the signature out. When the op still needs a simulation of its own (`simulate`: the client's gas, or the
 * estimate's one simulation could not decide, src/sponsor/oneCall.ts; never with skipFinalSimulation), that
 * final simulation runs first, and only an op it passed is reserved: a refused op leaves no record. The
 * reservation is recorded signed at once (with its webhook event); the signature leaves once it stands. Before
 * the reservation, the window is checked against the chain's fresh clocks (Target.clockCheck).
 * Raises the landing step's and the reserve step's errors.
 */
import type { Hex } from "@paymaster/shared";
import type { SenderCodeSink } from "../probe.ts";
import type { SimulatedOp } from "../../chain/entryPoint.ts";
import { landedFields } from "../op.ts";
import { checkLanding } from "./landing.ts";
import type { MaxCost } from "./maxCost.ts";
import { reservationRefusal, reserve, type Reservation } from "./reserve.ts";
import type { Target } from "./target.ts";
import type { TokenQuote } from "./tokenQuote.ts";
import { NO_SPAN, traced, type TraceSpan } from "../../telemetry/trace.ts";

export interface CommitInput {
  target: Target;
  /** The signed op, packed once (the sign step's). */
  landing: SimulatedOp;
  cost: MaxCost;
  token: TokenQuote | null;
  /** Simulate the signed op before reserving it. */
  simulate: boolean;
  /** Where that simulation reports the sender's code when it reads it (src/sponsor/steps/delegate.ts). */
  senderCode?: SenderCodeSink | undefined;
}

/** What the answer carries once the signature may leave. */
export interface Committed {
  sponsorshipId: string;
  userOpHash: Hex;
  paymasterAndData: Hex;
}

export async function commitSponsorship({ target, landing, cost, token, simulate, senderCode }: CommitInput, span: TraceSpan = NO_SPAN): Promise<Committed> {
  if (simulate) await traced(span, "step.checkLanding", checkLanding, { target, op: landing, token, signed: true, senderCode });
  const { userOpHash, paymasterAndData } = landedFields(landing, target.entry.entryPoint, target.call.network.config.chainId);
  await target.clockCheck(target.window); // the chain's clock still inside the window (read beside the chain call)
  const reservation = await traced(span, "step.reserve", reserve, { target, cost, token, userOpHash, paymasterAndData });
  if (!reservation.ok) throw reservationRefusal(reservation, target, token);
  return { sponsorshipId: reservation.record.id, userOpHash, paymasterAndData };
}
