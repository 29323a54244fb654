/**
 * pm_getTokenQuotes `[{tokens?, version?, userOp?}]` (the object, or no params at all): the network's enabled
 * ERC-20 tokens, for a wallet that wants to show "pay gas in ...":
 *
 *   tokens   symbols or addresses to quote (default: every enabled token); an unknown or disabled one ->
 *            TOKEN_NOT_SUPPORTED
 *   version  "v0.6" (default), "v0.7" or "v0.8": picks the ERC-20 paymaster to approve and its postOpGas
 *   userOp   a user operation of that version (same schema as pm_sponsorUserOperation): adds, per token,
 *            `maxTokenCost`, the most that op can be charged, from the ERC-20 pipeline's own estimate (as
 *            pm_estimateUserOperationGas in ERC-20 mode would compute it; the sender's balance is not required)
 *
 * Answers `{network, entrypointVersion, entryPoint, paymaster, tokens: [{symbol, address, decimals,
 * exchangeRate, postOpGas, paymaster, maxTokenCost?}]}`; exchangeRate is token base units per 1e18 wei with
 * the markup included, amounts are decimal strings. Nothing is reserved or signed.
 */
import { z } from "zod";
import type { EntryPointVersion } from "@paymaster/shared";
import { defineMethod } from "../rpc/method.ts";
import { readyChain, type CallContext } from "../context.ts";
import { RpcError } from "../errors.ts";
import { formatParamsPath, toParamsIssues } from "../rpc/dispatch.ts";
import { extraText, jsonTypeOf, objectParams, sponsorParamsSchema, type SponsorRequest } from "../wire/schemas.ts";
import { dryRunPipeline } from "../sponsor/pipeline.ts";
import { exchangeRate } from "../sponsor/price.ts";
import { chainWait } from "../timing.ts";
import type { Token } from "../store/types.ts";
import { knownNow, lookupsOf } from "../store/configCache.ts";

const TOKENS_MAX = 20;

const quoteObject = z.strictObject(
  {
    tokens: z.array(extraText().min(1), { error: "expected an array of token symbols or addresses" }).min(1).max(TOKENS_MAX).optional(),
    version: z.enum(["v0.6", "v0.7", "v0.8"], { error: 'expected "v0.6", "v0.7" or "v0.8"' }).optional(),
    userOp: z.unknown().optional(),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? `unknown field(s) ${issue.keys.join(", ")} (allowed: tokens, version, userOp)` : issue.code === "invalid_type" ? `expected {tokens?, version?, userOp?}, got ${jsonTypeOf(issue.input)}` : undefined,
  },
);

export interface QuoteParams {
  tokens?: string[] | undefined;
  version: EntryPointVersion;
  userOp?: unknown;
}

export const quoteParamsSchema: z.ZodType<QuoteParams> = objectParams<z.infer<typeof quoteObject>>("tokens?, version?, userOp?", quoteObject, () => ({})).transform(
  (data): QuoteParams => ({ tokens: data.tokens, version: data.version ?? "v0.6", ...(data.userOp !== undefined ? { userOp: data.userOp } : {}) }),
);

export const pm_getTokenQuotes = defineMethod({
  name: "pm_getTokenQuotes",
  params: quoteParamsSchema,
  async handler(params, call) {
    const { network } = call;
    const entry = network.entryPoint(params.version);
    if (!entry) {
      throw new RpcError("UNSUPPORTED_ENTRYPOINT_VERSION", `${network.config.name} does not serve EntryPoint ${params.version}`, { supported: network.versions });
    }
    const chain = readyChain(network);
    const name = network.config.name;

    let tokens: Token[];
    const lookups = lookupsOf(call);
    if (params.tokens) {
      tokens = [];
      for (const wanted of params.tokens) {
        const token = await knownNow(lookups, (l) => l.token(name, wanted));
        if (!token || !token.enabled) {
          throw new RpcError("TOKEN_NOT_SUPPORTED", `Token ${JSON.stringify(wanted.slice(0, 64))} is not supported on ${name}`, { token: wanted.slice(0, 64) });
        }
        if (!tokens.some((t) => t.address === token.address)) tokens.push(token);
      }
    } else {
      tokens = (await lookups.tokens(name)).filter((t) => t.enabled);
    }

    // The user operation, checked like pm_sponsorUserOperation's (issues reported under params[0].userOp).
    let request: SponsorRequest | undefined;
    if (params.userOp !== undefined) {
      const parsed = sponsorParamsSchema.safeParse([params.userOp, { version: params.version }]);
      if (!parsed.success) {
        const issues = toParamsIssues(parsed.error.issues).map((issue) => ({ ...issue, path: [0, "userOp", ...issue.path.slice(1)] }));
        throw new RpcError("INVALID_PARAMS", `Invalid params for pm_getTokenQuotes: ${formatParamsPath(issues[0]!.path)}: ${issues[0]!.message}`, { issues });
      }
      request = parsed.data;
    }

    const postOpGas = chain.erc20[params.version]?.postOpGas ?? 0n;
    const nativeUsd = await chainWait(call.timing, () => chain.prices.usd(network.config.nativeUsdPrice));
    const quotes = [];
    for (const token of tokens) {
      const tokenUsd = await chainWait(call.timing, () => chain.prices.usd(token.priceSource));
      const quote: Record<string, unknown> = {
        symbol: token.symbol,
        address: token.address,
        decimals: token.decimals,
        exchangeRate: exchangeRate(nativeUsd, tokenUsd, token.decimals, token.markupBps).toString(),
        postOpGas: postOpGas.toString(),
        paymaster: entry.erc20Paymaster,
      };
      if (request) quote["maxTokenCost"] = (await maxTokenCostFor(request, token, call)).toString();
      quotes.push(quote);
    }
    return { network: name, entrypointVersion: params.version, entryPoint: entry.entryPoint, paymaster: entry.erc20Paymaster, tokens: quotes };
  },
});

/**
 * The ERC-20 pipeline's maximum token cost for the op, as a dry run (no simulation of the final op, nothing
 * reserved or signed). A sender whose balance is short still gets the figure: it is the `required` of the
 * pipeline's TOKEN_BALANCE_INSUFFICIENT refusal.
 */
async function maxTokenCostFor(request: SponsorRequest, token: Token, call: CallContext): Promise<bigint> {
  const { strategyCode: _s, ...rest } = request;
  try {
    const result = await dryRunPipeline({ ...rest, token: token.address } as SponsorRequest, call);
    return result.token!.maxTokenCost;
  } catch (error) {
    if (error instanceof RpcError && error.reason === "TOKEN_BALANCE_INSUFFICIENT" && typeof error.details["required"] === "string") {
      return BigInt(error.details["required"]);
    }
    throw error;
  }
}
