/**
 * pm_getPaymasterData signs the op's gas fields, and ERC-7677 answers only the paymaster fields: the client
 * cannot learn a gas value the service would fill in, so the op it sends would not match the signature. The
 * final call therefore needs every gas value final (the client estimates after pm_getPaymasterStubData); a
 * missing or zero one is refused with INVALID_PARAMS naming each, before anything is reserved or signed.
 */
import { RpcError } from "../errors.ts";
import { formatParamsPath } from "../rpc/dispatch.ts";
import type { SponsorRequest } from "../wire/schemas.ts";

export const FINAL_GAS_FIELDS = ["callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas"] as const;
/** A zero priority fee is a final value (chains without priority fees, e.g. Arbitrum, estimate 0): only its absence is refused. */
const ZERO_IS_FINAL: ReadonlySet<string> = new Set(["maxPriorityFeePerGas"]);

export function requireFinalGas(request: SponsorRequest, method: string): void {
  const op = request.userOp as Partial<Record<(typeof FINAL_GAS_FIELDS)[number], bigint>>;
  const missing = FINAL_GAS_FIELDS.filter((field) => op[field] === undefined || (op[field] === 0n && !ZERO_IS_FINAL.has(field)));
  if (missing.length === 0) return;
  const issues = missing.map((field) => ({
    path: [0, field],
    message: "is missing or zero: give the final value (from your bundler's estimate after pm_getPaymasterStubData), which the signature covers",
  }));
  const named = issues.map((issue) => formatParamsPath(issue.path)).join(", ");
  throw new RpcError("INVALID_PARAMS", `Invalid params for ${method}: the final gas values are needed (ERC-7677), missing or zero: ${named}`, { issues });
}
