// A gas tank owner's consent (User Sponsor mode): the tank of (chain, sender) pays only for projects its owner
// allowed. The owner proves it speaks for the sender by signing this EIP-712 message with what the sender
// accepts as its signature: the EOA's key (a plain or EIP-7702-delegated EOA), or anything the account's
// ERC-1271 isValidSignature accepts (ERC-6492 wrapped while it is not deployed yet). `issuedAt` orders a tank's
// consents for one project: the service keeps the newest, so an older signed message cannot be replayed to undo
// a later change.
import type { Address } from "./types.ts";

export const GAS_TANK_CONSENT_DOMAIN_NAME = "ERC-4337 Paymaster gas tank";
export const GAS_TANK_CONSENT_DOMAIN_VERSION = "1";

export const GAS_TANK_CONSENT_TYPES = {
  GasTankConsent: [
    { name: "sender", type: "address" },
    { name: "project", type: "string" },
    { name: "allowed", type: "bool" },
    { name: "issuedAt", type: "uint64" },
  ],
} as const;

export interface GasTankConsent {
  /** The smart account (or EOA) whose gas tank is concerned. */
  sender: Address;
  /** The project id the consent is for (the API key's project). */
  project: string;
  /** true: the project's requests may draw from the tank; false: they may not (any more). */
  allowed: boolean;
  /** Unix seconds when the owner signed; the service accepts it within a few minutes of its clock. */
  issuedAt: bigint;
}

/** The EIP-712 typed data to sign (eth_signTypedData_v4, viem's signTypedData) for one consent on one chain. */
export function gasTankConsentTypedData(chainId: number, consent: GasTankConsent) {
  return {
    domain: { name: GAS_TANK_CONSENT_DOMAIN_NAME, version: GAS_TANK_CONSENT_DOMAIN_VERSION, chainId },
    types: GAS_TANK_CONSENT_TYPES,
    primaryType: "GasTankConsent" as const,
    message: consent,
  };
}
