/**
 * The ERC-4337 bundler methods, forwarded on the standard endpoint to the network's bundler
 * (networks[].bundlerUrl; src/bundler/client.ts) under the caller's API key, rate limits, metrics and logs, so
 * `createBundlerClient({ transport: http(ourUrl), paymaster: true })` needs a single URL. Params are checked for
 * their shape only (the bundler validates the operation) and forwarded as sent.
 */
import { z } from "zod";
import { numberToHex } from "viem";
import { defineMethod, type MethodDefinition } from "../rpc/method.ts";
import { address, hexBytes, jsonTypeOf, noParamsSchema } from "../wire/schemas.ts";
import { forwardToBundler } from "../bundler/client.ts";

const userOpObject = z.unknown().refine((v) => typeof v === "object" && v !== null && !Array.isArray(v), {
  error: (issue) => `expected the user operation object, got ${jsonTypeOf(issue.input)}`,
});
const stateOverride = z.unknown().refine((v) => typeof v === "object" && v !== null && !Array.isArray(v), {
  error: (issue) => `expected a state override object, got ${jsonTypeOf(issue.input)}`,
});
const userOpHash = hexBytes({ maxBytes: 32 }).refine((v) => v.length === 66, { error: "expected a 32-byte user operation hash" });

/** `params` when each item fits `items` (the optional ones last), as sent. */
function positional(names: string, items: readonly z.ZodType[], required = items.length): z.ZodType<unknown[]> {
  return z.unknown().transform((params, ctx): unknown[] => {
    if (!Array.isArray(params) || params.length < required || params.length > items.length) {
      const got = Array.isArray(params) ? `${params.length} params` : params === undefined ? "none" : jsonTypeOf(params);
      ctx.addIssue({ code: "custom", message: `expected params [${names}], got ${got}` });
      return z.NEVER;
    }
    params.forEach((value, index) => {
      const parsed = items[index]!.safeParse(value);
      if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: [index, ...issue.path], message: issue.message });
    });
    return params;
  });
}

function forwarded(name: string, params: z.ZodType<unknown[] | undefined>): MethodDefinition<unknown[] | undefined> {
  return defineMethod({ name, params, handler: (sent, call) => forwardToBundler(call, name, sent ?? []) });
}

export const BUNDLER_METHODS: readonly MethodDefinition<any>[] = Object.freeze([
  forwarded("eth_sendUserOperation", positional("userOp, entryPoint", [userOpObject, address()])),
  forwarded("eth_estimateUserOperationGas", positional("userOp, entryPoint, stateOverride?", [userOpObject, address(), stateOverride], 2)),
  forwarded("eth_getUserOperationReceipt", positional("userOpHash", [userOpHash])),
  forwarded("eth_getUserOperationByHash", positional("userOpHash", [userOpHash])),
  forwarded("eth_supportedEntryPoints", noParamsSchema),
  // Answered here, not forwarded: bundler clients ask their transport for the chain id when they know no chain.
  defineMethod({ name: "eth_chainId", params: noParamsSchema, handler: async (_params, { network }) => numberToHex(network.config.chainId) }),
]);
