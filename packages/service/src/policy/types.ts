/**
 * A strategy's policy (Sponsor mode): who may be sponsored, which calls, how much. Every field is optional;
 * an absent field does not restrict. Amounts in wei are bigint; USD amounts are decimal strings ("12.50").
 */
import type { Address, Hex } from "@paymaster/shared";

/** How a sponsorship is paid: by the paymaster (sponsor), by the sender in an ERC-20 token (erc20), or from the sender's own gas tank (user). */
export type SponsorMode = "sponsor" | "erc20" | "user";

/** One spending cap: any of a wei total, a USD total and an operation count. */
export interface Cap {
  maxWei?: bigint;
  maxUsd?: string;
  maxOps?: number;
}

export interface StrategyRules {
  /** Only these senders may be sponsored. */
  senderAllowlist?: Address[];
  /** These senders are never sponsored (checked before the allowlist). */
  senderDenylist?: Address[];
  /**
   * Allowed calls: every call the account's callData makes (every call of a batch) must go to a listed
   * target and, when `selectors` is given, start with one of them. When set, callData that cannot be decoded
   * (an unknown account ABI) is refused.
   */
  targets?: { address: Address; selectors?: Hex[] }[];
  caps?: {
    /** Over the strategy's whole life. */
    global?: Cap;
    /** Per UTC day (00:00–24:00 UTC). */
    daily?: Cap;
    /** Per sender over the strategy's life. */
    perSender?: Cap;
    /** For a single operation (its maximum cost). */
    perOp?: Omit<Cap, "maxOps">;
  };
  /** Ceilings on the operation's gas limits (tighter than the network's caps). */
  gasLimits?: {
    maxVerificationGasLimit?: bigint;
    maxCallGasLimit?: bigint;
    maxPreVerificationGas?: bigint;
  };
  /** Ceiling on maxFeePerGas relative to the chain's current maxFeePerGas, in basis points (15000 = 1.5x). */
  maxFeeMultiplierBps?: number;
  /**
   * EIP-7702 senders (v0.8 ops carrying eip7702Auth): `allow: false` refuses them; `delegates`, when given,
   * lists the only delegate implementations sponsored. Absent: allowed, any delegate.
   */
  eip7702?: { allow: boolean; delegates?: Address[] };
  /**
   * Browser keys (keys with an origins list): at most this many open sponsorships per (key, client address)
   * for requests under this strategy, instead of the configuration's `reservations.maxOutstandingPerClientIp`.
   * Absent: the smaller of that and half the strategy's smallest `maxOps` cap (global, daily), at least 1, so
   * one client cannot hold a small op-count cap with ops nobody signs (sponsor/outstanding.ts).
   */
  maxOutstandingPerClientIp?: number;
}

/** One rule's verdict, for refusals and for the dry run. */
export interface RuleVerdict {
  /** Stable rule name, e.g. "senderAllowlist", "targets", "caps.daily.maxUsd", "gasLimits.maxCallGasLimit". */
  rule: string;
  pass: boolean;
  /** The limit that applies (JSON-safe: bigints as decimal strings). */
  limit?: unknown;
  /** The value that was checked against it. */
  value?: unknown;
  /** A sentence for humans. */
  message: string;
}

/** The cap scopes that need stored totals (enforced by the store, atomically with the reservation). */
export type CapScope = "global" | "daily" | "perSender";

/**
 * One cap the store must enforce atomically when it reserves an operation's maximum cost: the running totals
 * of (`scope`, `key`) plus this operation must stay within every limit given. A refusal names the rule
 * `${rulePrefix}.maxWei` / `.maxUsd` / `.maxOps`.
 */
export interface CapCheck {
  scope: CapScope;
  /** "" for global, the UTC day ("2026-11-22") for daily, the checksummed sender for perSender. */
  key: string;
  maxWei?: bigint;
  /** The USD limit in micro-units (1e-6 USD), rounded down from the configured decimal. */
  maxUsdMicros?: bigint;
  maxOps?: number;
  rulePrefix: "caps.global" | "caps.daily" | "caps.perSender";
}
