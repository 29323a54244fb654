/**
 * Step (signing methods only): sign the op as it will land. Decides the paymaster data: the paymaster's hash
 * of the final op (ERC-20 mode: with token, rate, charge mode and the signed cap on the charge, maxTokenCharge) signed by the network's signer, then the op
 * rebuilt with it and packed once. The signature stays inside the pipeline until the landing check and the
 * reservation pass. Raises only the signer's errors.
 */
import { erc20PaymasterHash, verifyingPaymasterHash, ChargeMode, STUB_MAX_TOKEN_CHARGE } from "@paymaster/shared";
import type { SimulatedOp } from "../../chain/entryPoint.ts";
import { buildOp, packedOnce, paymasterDataFor, type GasValues } from "../op.ts";
import type { MaxCost } from "./maxCost.ts";
import type { Target } from "./target.ts";
import type { TokenQuote } from "./tokenQuote.ts";

export interface SignInput {
  target: Target;
  gas: GasValues;
  /** The final op with stub paymaster data (the maximum cost step's). */
  cost: MaxCost;
  token: TokenQuote | null;
}

export async function signLanding({ target, gas, cost, token }: SignInput): Promise<SimulatedOp> {
  const { mode, paymaster, window } = target;
  const chainId = target.call.network.config.chainId;
  const exchangeRate = token?.exchangeRate ?? 0n;
  const chargeMode = token?.chargeMode ?? ChargeMode.PreCharge;
  // The signed cap on the token charge (audit 2, N-7): the op's maximum token cost (stubs carry none).
  const maxTokenCharge = token?.maxTokenCost ?? STUB_MAX_TOKEN_CHARGE;
  // The sender's EIP-7702 delegate (the delegate step): bound by the hash of a 0x7702 marker op and of an op
  // without initCode from an already-delegated EOA (re-audit N-5).
  const hashParams = { ...cost.op, chainId, paymaster, ...window, eip7702Delegate: target.eip7702Delegate } as const;
  const hash =
    mode.mode === "erc20"
      ? erc20PaymasterHash({ ...hashParams, token: mode.token.address, exchangeRate, chargeMode, maxTokenCharge })
      : verifyingPaymasterHash(hashParams);
  const signature = await target.chain.signer.signHash(hash, target.call.timing);
  return packedOnce(buildOp(target.request, gas, paymaster, paymasterDataFor(target, exchangeRate, chargeMode, signature, maxTokenCharge)));
}
