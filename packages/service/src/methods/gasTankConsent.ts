/**
 * How a gas tank's owner allows a project to draw from it (User Sponsor mode denies every project a tank has
 * not allowed: sponsor/policy.ts requireTankConsent). Two methods on the standard endpoint, under the
 * project's API key (its rate limits, origins and client addresses):
 *
 *   pm_gasTankConsentRequest [{sender, allowed?}]                     -> {typedData}: the EIP-712 message to sign
 *   pm_setGasTankConsent     [{sender, allowed, issuedAt, signature}] -> {sender, projectId, allowed, issuedAt}
 *
 * The project is always the key's own: a key can only ask for its project. The signature is checked the way
 * the sender accepts signatures, through viem's verifyTypedData on the network's RPC: an EOA's (plain or
 * EIP-7702-delegated) by recovery, a deployed account's by its ERC-1271 isValidSignature, a counterfactual
 * one's ERC-6492 wrapper by deploying it in the call — within bounds of size, gas and time
 * (signatureCheckBounds). A consent is accepted only when dated near the service's clock and after the recorded
 * one allows (store/tankConsentClock.ts): a withdrawal beats every consent signed before it was recorded, so a
 * message held back cannot undo it.
 */
import { z } from "zod";
import { createPublicClient, custom, numberToHex, type Hex } from "viem";
import { verifyTypedData } from "viem/actions";
import { gasTankConsentTypedData, type Address } from "@paymaster/shared";
import { defineMethod, type MethodDefinition } from "../rpc/method.ts";
import { readyChain, type CallContext, type NetworkRuntime } from "../context.ts";
import { address, hexBytes, objectParams } from "../wire/schemas.ts";
import { RpcError } from "../errors.ts";
import { chainWait } from "../timing.ts";
import { consentDateRefusal } from "../store/tankConsentClock.ts";
import { NodeError, RPC_DEFAULTS } from "../chain/rpc.ts";
import type { GasTankConsentRecord } from "../store/types.ts";

/** Room for an ERC-6492 wrapper (factory calldata) around the account's own signature; checked before any call. */
const SIGNATURE_MAX_BYTES = 4096;

const issuedAt = z.number().int().nonnegative().max(2 ** 53 - 1);

function typedDataFor(call: CallContext, sender: Address, allowed: boolean, at: number) {
  return gasTankConsentTypedData(call.network.config.chainId, { sender, project: call.apiKey.projectId, allowed, issuedAt: BigInt(at) });
}

export const pm_gasTankConsentRequest = defineMethod({
  name: "pm_gasTankConsentRequest",
  params: objectParams("sender, allowed?", z.strictObject({ sender: address(), allowed: z.boolean().optional() })),
  async handler({ sender, allowed = true }, call) {
    const typedData = typedDataFor(call, sender as Address, allowed, Math.floor(call.service.now()));
    // JSON as eth_signTypedData_v4 takes it: issuedAt as a number.
    return { typedData: { ...typedData, message: { ...typedData.message, issuedAt: Number(typedData.message.issuedAt) } } };
  },
});

export const pm_setGasTankConsent = defineMethod({
  name: "pm_setGasTankConsent",
  params: objectParams(
    "sender, allowed, issuedAt, signature",
    z.strictObject({ sender: address(), allowed: z.boolean(), issuedAt, signature: hexBytes({ maxBytes: SIGNATURE_MAX_BYTES }) }),
  ),
  async handler({ sender, allowed, issuedAt: at, signature }, call) {
    const dateRefusal = consentDateRefusal(at, Math.floor(call.service.now()));
    if (dateRefusal !== undefined) throw new RpcError("INVALID_CONSENT", dateRefusal);
    const checker = signatureChecker(call);
    const typedData = typedDataFor(call, sender as Address, allowed, at);
    const valid = await chainWait(call.timing, () => verifyTypedData(checker.client, { ...typedData, address: sender as Address, signature: signature as Hex }).catch(() => false));
    if (!valid && checker.unavailable) throw checker.unavailable;
    if (!valid) {
      const onChain = checker.callFailed ? `; its on-chain check failed within the ${checker.bounds.gas} gas it may use` : "";
      throw new RpcError("INVALID_CONSENT", `the signature is not ${sender}'s for this consent (project ${call.apiKey.projectId}, chain ${call.network.config.chainId}, allowed ${allowed}, issuedAt ${at}${onChain})`);
    }
    const { applied, consent } = await call.service.store.setGasTankConsent({
      network: call.network.config.name,
      sender: sender as Address,
      projectId: call.apiKey.projectId,
      allowed,
      issuedAt: at,
      changedBy: "owner",
    });
    if (!applied) throw new RpcError("INVALID_CONSENT", supersededMessage(at, consent));
    return { sender: consent.sender, projectId: consent.projectId, allowed: consent.allowed, issuedAt: consent.issuedAt };
  },
});

/**
 * What checking one consent's signature may cost the network's node (second review, finding 6): an ERC-6492
 * signature makes the node run the caller's factory calldata, an ERC-1271 one the account's code. Every eth_call
 * carries a gas limit, the network's cap on an op's validation with its account's deployment
 * (caps.maxVerificationGasLimit), instead of the node's own (often the block's); all calls together get the
 * network's per-call deadline. The signature's size is bounded before (SIGNATURE_MAX_BYTES, in the params).
 */
export function signatureCheckBounds(network: NetworkRuntime): { gas: bigint; deadlineMs: number } {
  return { gas: network.config.caps.maxVerificationGasLimit, deadlineMs: network.config.rpcDeadlineMs ?? RPC_DEFAULTS.deadlineMs };
}

/** eth_call params with the call's gas at most `cap` (set when absent). Pure. */
export function withGasCap(params: readonly unknown[], cap: bigint): unknown[] {
  const [request, ...rest] = params;
  if (typeof request !== "object" || request === null) return [...params];
  const asked = (request as { gas?: unknown }).gas;
  const gas = typeof asked === "string" && /^0x[0-9a-fA-F]+$/.test(asked) && BigInt(asked) < cap ? BigInt(asked) : cap;
  return [{ ...request, gas: numberToHex(gas) }, ...rest];
}

/**
 * A viem client on the network's chain client, within signatureCheckBounds. viem answers "not valid" when its
 * calls fail, so it remembers whether the chain could not be asked (then the answer is CHAIN_UNAVAILABLE, 503,
 * never a wrong-signature refusal) and whether an eth_call failed (reverted or ran out of gas).
 */
function signatureChecker(call: CallContext) {
  const chain = readyChain(call.network);
  const bounds = signatureCheckBounds(call.network);
  const deadline = performance.now() + bounds.deadlineMs;
  const state: { unavailable?: RpcError; callFailed: boolean } = { callFailed: false };
  const client = createPublicClient({
    transport: custom(
      {
        request: async ({ method, params }) => {
          const sent = (params as unknown[] | undefined) ?? [];
          try {
            const left = deadline - performance.now();
            if (left <= 0) {
              throw new RpcError("CHAIN_UNAVAILABLE", `The consent's signature could not be checked within ${bounds.deadlineMs} ms`, { network: call.network.config.name, cause: "timeout" });
            }
            return await chain.rpc.request(method, method === "eth_call" ? withGasCap(sent, bounds.gas) : sent, { deadlineMs: left });
          } catch (err) {
            if (err instanceof RpcError && err.reason === "CHAIN_UNAVAILABLE") state.unavailable = err;
            if (err instanceof NodeError && method === "eth_call") state.callFailed = true;
            throw err;
          }
        },
      },
      // The chain client already retries and fails over.
      { retryCount: 0 },
    ),
  });
  return {
    client,
    bounds,
    get unavailable() {
      return state.unavailable;
    },
    get callFailed() {
      return state.callFailed;
    },
  };
}

/** Why a message dated `at` cannot replace the recorded `consent`, and what to do. */
function supersededMessage(at: number, consent: GasTankConsentRecord): string {
  const recorded = `the consent recorded at ${consent.updatedAt} (allowed ${consent.allowed}, by ${consent.changedBy === "owner" ? "the owner" : "the operator"})`;
  return consent.allowed
    ? `issuedAt ${at} is before ${recorded}: sign a fresh consent`
    : `${recorded} is a withdrawal, which beats every consent signed before it: only one dated after ${consent.replaceableAfter} can allow this project again`;
}

/** Standard endpoint only: the v1 dialect is the spec's paymaster API, nothing more. */
export const TANK_CONSENT_METHODS: readonly MethodDefinition<any>[] = Object.freeze([pm_gasTankConsentRequest, pm_setGasTankConsent]);
