/**
 * Step (signing methods only): the final simulation and the reservation, side by side, then the decision to
 * hand the signature out. While the landing check runs (unless the network skips the final simulation), the
 * store work that does not depend on it goes ahead: the deposit check and the reservation, recorded as pending
 * (its signature kept, not handed out). Then, in the order a sequential run would refuse in: a refused
 * simulation withdraws the reservation (deleted, what it held freed: a refused op leaves no record) and is the
 * answer; a refused reservation is the answer next; a passed one is confirmed "signed" (with its webhook
 * event), and only then does the signature leave.
 * Raises the landing step's and the reserve step's errors, and SPONSORSHIP_CONFLICT (a concurrent request for
 * the same op replaced this one while the simulation ran).
 */
import type { Hex } from "@paymaster/shared";
import type { SimulatedOp } from "../../chain/entryPoint.ts";
import { RpcError } from "../../rpc/errors.ts";
import type { ReserveResult } from "../../store/types.ts";
import { landedFields } from "../op.ts";
import { checkLanding } from "./landing.ts";
import type { MaxCost } from "./maxCost.ts";
import { reservationRefusal, reserve } from "./reserve.ts";
import type { Target } from "./target.ts";
import type { TokenQuote } from "./tokenQuote.ts";
import { NO_SPAN, traced, type TraceSpan } from "../../telemetry/trace.ts";
import { serviceStore } from "../../store/traced.ts";

export interface CommitInput {
  target: Target;
  /** The signed op, packed once (the sign step's). */
  landing: SimulatedOp;
  cost: MaxCost;
  token: TokenQuote | null;
}

/** What the answer carries once the signature may leave. */
export interface Committed {
  sponsorshipId: string;
  userOpHash: Hex;
  paymasterAndData: Hex;
}

export async function commitSponsorship({ target, landing, cost, token }: CommitInput, span: TraceSpan = NO_SPAN): Promise<Committed> {
  const { call, entry, request } = target;
  const store = serviceStore(call.service, span);
  const simulate = call.network.config.skipFinalSimulation !== true;
  const simulation: Promise<{ failed: unknown } | undefined> = simulate
    ? traced(span, "step.checkLanding", checkLanding, { target, op: landing, token, signed: true }).then(
        () => undefined,
        (error: unknown) => ({ failed: error }),
      )
    : Promise.resolve(undefined);
  const { userOpHash, paymasterAndData } = landedFields(landing, entry.entryPoint, call.network.config.chainId);
  const reserving = traced(span, "step.reserve", reserve, { target, cost, token, userOpHash, paymasterAndData, pending: simulate }).then(
    (reservation): { reservation: ReserveResult } => ({ reservation }),
    (error: unknown): { failed: unknown } => ({ failed: error }),
  );
  const [simulated, reserved] = await Promise.all([simulation, reserving]);
  if (simulated !== undefined) {
    if ("reservation" in reserved && reserved.reservation.ok) {
      const id = reserved.reservation.record.id;
      // Should the store fail here, the pending row holds its cost until the expiry releases it: the answer is still the refusal.
      await store.withdrawSponsorship(id).catch((error: unknown) => call.service.logger.warn({ err: error, sponsorshipId: id }, "could not withdraw a refused reservation"));
    }
    throw simulated.failed;
  }
  if ("failed" in reserved) throw reserved.failed;
  const reservation = reserved.reservation;
  if (!reservation.ok) throw reservationRefusal(reservation, target, token);
  if (simulate && !(await store.confirmSponsorship(reservation.record.id))) {
    // Replaced by a concurrent request for the same op while the simulation ran: that one stands.
    const u = request.userOp;
    throw new RpcError("SPONSORSHIP_CONFLICT", undefined, { sender: u.sender, nonce: `0x${u.nonce.toString(16)}` });
  }
  return { sponsorshipId: reservation.record.id, userOpHash, paymasterAndData };
}
