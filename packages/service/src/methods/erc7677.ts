/**
 * Shared by the ERC-7677 methods (pm_getPaymasterStubData, pm_getPaymasterData): their params
 * `[userOp, entryPoint, chainIdHex, context]`, resolved against the network into the sponsor pipeline's
 * request, and the shapes of their results.
 *
 * The EntryPoint version is the one whose configured EntryPoint address is given (ENTRYPOINT_NOT_SUPPORTED
 * otherwise); the chain id must be the network's (CHAIN_ID_MISMATCH). `context` is null or an object whose
 * `strategy_code` / `token` work like the v1 extra data (both -> MODE_CONFLICT); other context fields are
 * ignored (a wallet may add its own). The user operation goes through the same schemas as
 * pm_sponsorUserOperation (viem's "0x0" gas fields mean "estimate"; paymaster fields are ignored, v0.7
 * paymaster gas limits are hints).
 */
import { z } from "zod";
import { numberToHex } from "viem";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import type { CallContext } from "../context.ts";
import { RpcError } from "../errors.ts";
import { formatParamsPath, toParamsIssues } from "../rpc/dispatch.ts";
import { address, extraText, hexQuantity, jsonTypeOf, sponsorParamsSchema, type SponsorRequest } from "../wire/schemas.ts";
import type { PipelineResult } from "../sponsor/pipeline.ts";

export interface Erc7677Params {
  userOp: unknown;
  entryPoint: Address;
  chainId: bigint;
  strategyCode?: string;
  token?: string;
}

const contextString = extraText().optional();
const contextObject = z.looseObject({ strategy_code: contextString, token: contextString });
/** null, or an object whose strategy_code / token (when present) are strings; other fields are ignored. */
const contextSchema = z.unknown().transform((value, ctx): { strategy_code?: string | undefined; token?: string | undefined } | null => {
  if (value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) {
    ctx.addIssue({ code: "custom", message: `expected the context object or null, got ${jsonTypeOf(value)}` });
    return z.NEVER;
  }
  const parsed = contextObject.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  return z.NEVER;
});

const entryPointSchema = address();
const chainIdSchema = hexQuantity();

/** `[userOp, entryPoint, chainIdHex, context]`; context may be omitted or null. */
export const erc7677ParamsSchema: z.ZodType<Erc7677Params> = z.unknown().transform((params, ctx): Erc7677Params => {
  if (!Array.isArray(params) || params.length < 3 || params.length > 4) {
    ctx.addIssue({
      code: "custom",
      message: `expected params [userOp, entryPoint, chainId, context], got ${Array.isArray(params) ? `${params.length} params` : params === undefined ? "none" : jsonTypeOf(params)}`,
    });
    return z.NEVER;
  }
  const [userOp, rawEntryPoint, rawChainId, rawContext] = params as unknown[];
  const entryPoint = entryPointSchema.safeParse(rawEntryPoint);
  const chainId = chainIdSchema.safeParse(rawChainId);
  const context = contextSchema.safeParse(rawContext ?? null);
  for (const [index, parsed] of [[1, entryPoint], [2, chainId], [3, context]] as const) {
    if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: [index, ...issue.path], message: issue.message });
  }
  if (typeof userOp !== "object" || userOp === null || Array.isArray(userOp)) {
    ctx.addIssue({ code: "custom", path: [0], message: `expected the user operation object, got ${jsonTypeOf(userOp)}` });
  }
  if (!entryPoint.success || !chainId.success || !context.success || typeof userOp !== "object" || userOp === null) return z.NEVER;
  const strategyCode = context.data?.strategy_code || undefined;
  const token = context.data?.token || undefined;
  return { userOp, entryPoint: entryPoint.data as Address, chainId: chainId.data, ...(strategyCode ? { strategyCode } : {}), ...(token ? { token } : {}) };
});

/** The EntryPoint version of `entryPoint` on this network, else ENTRYPOINT_NOT_SUPPORTED. */
export function versionOfEntryPoint(call: CallContext, entryPoint: Address): EntryPointVersion {
  const { network } = call;
  for (const version of network.versions) {
    if (network.entryPoint(version)?.entryPoint.toLowerCase() === entryPoint.toLowerCase()) return version;
  }
  const supported = network.versions.map((version) => network.entryPoint(version)!.entryPoint);
  throw new RpcError("ENTRYPOINT_NOT_SUPPORTED", `${network.config.name} does not serve EntryPoint ${entryPoint}; supported: ${supported.join(", ")}`, {
    entryPoint,
    supported,
  });
}

/** The sponsor pipeline's request for ERC-7677 params, checked against the network. */
export function erc7677Request(params: Erc7677Params, call: CallContext, method: string): SponsorRequest {
  const expected = BigInt(call.network.config.chainId);
  if (params.chainId !== expected) {
    throw new RpcError("CHAIN_ID_MISMATCH", `Chain id ${numberToHex(params.chainId)} is not ${call.network.config.name}'s (${numberToHex(expected)})`, {
      chainId: numberToHex(params.chainId),
      expected: numberToHex(expected),
    });
  }
  const version = versionOfEntryPoint(call, params.entryPoint);
  const extra = { version, ...(params.strategyCode ? { strategy_code: params.strategyCode } : {}), ...(params.token ? { token: params.token } : {}) };
  const parsed = sponsorParamsSchema.safeParse([params.userOp, extra]);
  if (parsed.success) return parsed.data;
  // Issues under the extra (index 1) are the context's (index 3).
  const issues = toParamsIssues(parsed.error.issues).map((issue) => (issue.path[0] === 1 ? { ...issue, path: [3, ...issue.path.slice(1)] } : issue));
  const first = issues[0];
  throw new RpcError("INVALID_PARAMS", `Invalid params for ${method}${first ? `: ${formatParamsPath(first.path)}: ${first.message}` : ""}`, { issues });
}

/** Who pays, as ERC-7677 clients may show it. The icon is a data URI (a small inline SVG). */
export const SPONSOR_INFO = Object.freeze({
  name: "Paymaster",
  icon: `data:image/svg+xml;base64,${Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f6feb"/><path d="M10 24V8h7a5 5 0 0 1 0 10h-7" fill="none" stroke="#fff" stroke-width="3"/></svg>',
  ).toString("base64")}`,
});

const hex = (value: bigint): Hex => numberToHex(value);

/**
 * The paymaster fields of a pipeline result, ERC-7677 style: v0.6 `{paymasterAndData}`; v0.7 `{paymaster,
 * paymasterData, paymasterVerificationGasLimit, paymasterPostOpGasLimit}` (hex quantities; paymasterData
 * excludes the address and the two packed gas limits).
 */
export function paymasterFields(result: PipelineResult): Record<string, Hex> {
  if (result.version === "v0.6") return { paymasterAndData: result.paymasterAndData };
  return {
    paymaster: result.paymaster,
    paymasterData: `0x${result.paymasterAndData.slice(2 + 40 + 64)}`,
    paymasterVerificationGasLimit: hex(result.gas.paymasterVerificationGasLimit),
    paymasterPostOpGasLimit: hex(result.gas.paymasterPostOpGasLimit),
  };
}
