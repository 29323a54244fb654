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
 * one's ERC-6492 wrapper by deploying it in the call. A consent is accepted within CONSENT_WINDOW_SECONDS of
 * the service's clock and only when newer than the one recorded, so an old message cannot be replayed.
 */
import { z } from "zod";
import { createPublicClient, custom, type Hex } from "viem";
import { verifyTypedData } from "viem/actions";
import { gasTankConsentTypedData, type Address } from "@paymaster/shared";
import { defineMethod, readyChain, type CallContext, type MethodDefinition } from "../rpc/method.ts";
import { address, hexBytes, objectParams } from "../rpc/schemas.ts";
import { RpcError } from "../rpc/errors.ts";
import { chainWait } from "../timing.ts";

/** How far a consent's issuedAt may be from the service's clock (either way). */
export const CONSENT_WINDOW_SECONDS = 600;
/** Room for an ERC-6492 wrapper (factory calldata) around the account's own signature. */
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
    const now = Math.floor(call.service.now());
    if (Math.abs(at - now) > CONSENT_WINDOW_SECONDS) {
      throw new RpcError("INVALID_CONSENT", `issuedAt ${at} is more than ${CONSENT_WINDOW_SECONDS} s from the service's clock (${now}): sign a fresh consent`);
    }
    const chain = readyChain(call.network);
    // viem answers "not valid" when its calls fail, so the transport remembers whether the chain could not be
    // asked: then the answer is CHAIN_UNAVAILABLE (503), never a wrong-signature refusal.
    let unavailable: unknown;
    const client = createPublicClient({
      transport: custom({
        request: async ({ method, params }) => {
          try {
            return await chain.rpc.request(method, (params as unknown[] | undefined) ?? []);
          } catch (err) {
            if (err instanceof RpcError && err.reason === "CHAIN_UNAVAILABLE") unavailable = err;
            throw err;
          }
        },
        // The chain client already retries and fails over.
      }, { retryCount: 0 }),
    });
    const typedData = typedDataFor(call, sender as Address, allowed, at);
    const valid = await chainWait(call.timing, () => verifyTypedData(client, { ...typedData, address: sender as Address, signature: signature as Hex }).catch(() => false));
    if (!valid && unavailable) throw unavailable;
    if (!valid) {
      throw new RpcError("INVALID_CONSENT", `the signature is not ${sender}'s for this consent (project ${call.apiKey.projectId}, chain ${call.network.config.chainId}, allowed ${allowed}, issuedAt ${at})`);
    }
    const { applied, consent } = await call.service.store.setGasTankConsent({
      network: call.network.config.name,
      sender: sender as Address,
      projectId: call.apiKey.projectId,
      allowed,
      issuedAt: at,
      changedBy: "owner",
    });
    if (!applied) throw new RpcError("INVALID_CONSENT", `a consent issued at ${consent.issuedAt} or later is already recorded for this tank and project: sign a fresh one`);
    return { sender: consent.sender, projectId: consent.projectId, allowed: consent.allowed, issuedAt: consent.issuedAt };
  },
});

/** Standard endpoint only: the v1 dialect is the spec's paymaster API, nothing more. */
export const TANK_CONSENT_METHODS: readonly MethodDefinition<any>[] = Object.freeze([pm_gasTankConsentRequest, pm_setGasTankConsent]);
