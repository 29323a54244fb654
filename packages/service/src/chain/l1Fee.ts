/**
 * The L1 data fee of a rollup, expressed as preVerificationGas. On a rollup the bundler pays for the bytes its
 * handleOps transaction posts to L1, and gets that back only through preVerificationGas (the one gas value
 * the EntryPoint charges without measuring it), so an op whose preVerificationGas leaves it out is refused by
 * the bundler, and a paymaster whose caps leave it out counts the wrong cost.
 *
 * Priced the way the bundlers price it (Alto's preVerificationGas calculator): the op is put in a one-op
 * handleOps transaction to the EntryPoint, and the chain's own oracle is asked what that transaction costs:
 * - op-stack: GasPriceOracle.getL1Fee(unsigned RLP tx) -> wei (Fjord: FastLZ-compressed size, so the bytes'
 *   entropy matters), divided by the op's L2 gas price;
 * - scroll: L1GasPriceOracle.getL1Fee(tx) -> wei, the same way (not run offline: no Scroll node here);
 * - arbitrum: NodeInterface.gasEstimateL1Component(to, false, calldata) -> the L1 part already in L2 gas
 *   (not run offline: NodeInterface exists only on Arbitrum nodes).
 * The placeholders in the priced op have the entropy of real values (a real signature does not compress, a
 * constant one does), and a margin covers the L1 price moving between the quote and inclusion.
 */
import { serializeTransaction, toFunctionSelector } from "viem";
import type { Address, GasKind, Hex, VersionedUserOperation } from "@paymaster/shared";
import type { ChainRpc } from "./rpc.ts";
import { addressWord, bytesPart, encodeHandleOps, encodeParts, uintWord } from "./userOpAbi.ts";

/** OP Stack GasPriceOracle predeploy. */
export const OP_GAS_PRICE_ORACLE: Address = "0x420000000000000000000000000000000000000F";
/** Scroll L1GasPriceOracle predeploy. */
export const SCROLL_L1_GAS_PRICE_ORACLE: Address = "0x5300000000000000000000000000000000000002";
/** Arbitrum NodeInterface (a virtual contract answered by Arbitrum nodes in eth_call). */
export const ARBITRUM_NODE_INTERFACE: Address = "0x00000000000000000000000000000000000000C8";

/**
 * Margin on the quoted L1 part, in basis points: the L1 price moves between the quote and inclusion, and
 * bundlers re-check preVerificationGas at send time (Alto added 10% on OP Stack and Arbitrum for that).
 */
export const L1_FEE_MARGIN_BPS = 1_000n;

const GET_L1_FEE = toFunctionSelector("function getL1Fee(bytes)").slice(2);
const GAS_ESTIMATE_L1_COMPONENT = toFunctionSelector("function gasEstimateL1Component(address,bool,bytes)").slice(2);

/** What the L1 part is priced from: the op as it will be sent (final-length data), its chain and EntryPoint. */
export interface L1FeeInput {
  chainId: number;
  entryPoint: Address;
  op: VersionedUserOperation;
  /** What one unit of the op's gas costs on L2 (see l2GasPrice). */
  l2GasPrice: bigint;
}

/** The L1 part in wei (op-stack, scroll) or in L2 gas (arbitrum), as the chain quoted it (no margin). */
export type L1Quote = { kind: "wei"; wei: bigint } | { kind: "gas"; gas: bigint };

/** Fixed high-entropy bytes (a keccak-like stream from a 32-bit xorshift): priced like a real signature. */
export function highEntropyHex(length: number, seed = 0x5eed_1234): Hex {
  let x = seed >>> 0 || 1;
  let out = "0x";
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    // Never a zero byte: a zero costs less than any other byte on every chain kind.
    out += ((x % 255) + 1).toString(16).padStart(2, "0");
  }
  return out as Hex;
}

/**
 * A stand-in for a gas value not known yet that will be at most `bound` (an estimated limit, under its cap):
 * high-entropy bytes, as many as `bound` takes. No value up to `bound` has more bytes, or bytes that cost more
 * L1 data (a zero byte costs less everywhere, and these do not compress), so pricing the op with it before the
 * estimate lets the oracle's quote run beside the estimate's simulation instead of after it (issue 38). Each
 * field takes its own `field` number: two equal stand-ins would compress against each other (FastLZ).
 */
export function placeholderUpTo(bound: bigint, field: number): bigint {
  const bytes = Math.max(1, Math.ceil(bound.toString(16).length / 2));
  return BigInt(highEntropyHex(bytes, 0x6a5b0d + field * 0x9e37));
}

/**
 * The op as priced: its signature's last 65 bytes (all of it when shorter) replaced by high-entropy bytes of
 * the same length, since the client's dummy signature is often a constant that compresses to nothing, and
 * preVerificationGas itself (still unknown) as a full 3-byte value.
 */
export function opForL1Pricing(op: VersionedUserOperation): VersionedUserOperation {
  const signature = op.userOp.signature;
  const bytes = (signature.length - 2) / 2;
  const replaced = Math.min(65, bytes);
  const priced = `${signature.slice(0, 2 + (bytes - replaced) * 2)}${highEntropyHex(replaced).slice(2)}` as Hex;
  const userOp = { ...op.userOp, signature: priced, preVerificationGas: 0xfedcban };
  return { version: op.version, userOp } as VersionedUserOperation;
}

/**
 * The unsigned EIP-1559 transaction a bundler would send for the op: handleOps([op], beneficiary) to the
 * EntryPoint, with full-width nonce and fee fields (worst case for their RLP length).
 */
export function bundleTransaction(input: Pick<L1FeeInput, "chainId" | "entryPoint" | "op">): Hex {
  const maxUint64 = (1n << 64n) - 1n;
  return serializeTransaction({
    type: "eip1559",
    chainId: input.chainId,
    nonce: 0xffffff,
    gas: maxUint64,
    maxFeePerGas: maxUint64,
    maxPriorityFeePerGas: maxUint64,
    to: input.entryPoint,
    value: 0n,
    data: bundleCalldata(input),
  });
}

/** handleOps calldata of the priced op, with a high-entropy beneficiary (a bundler's address does not compress). */
function bundleCalldata(input: Pick<L1FeeInput, "entryPoint" | "op">): Hex {
  return encodeHandleOps(opForL1Pricing(input.op), `0x${highEntropyHex(20, 0xbe4ef1c1).slice(2)}`);
}

function firstWord(result: Hex, what: string): bigint {
  if (!/^0x[0-9a-fA-F]{64,}$/.test(result)) throw new Error(`${what}: unexpected answer ${result.slice(0, 80)}`);
  return BigInt(result.slice(0, 66));
}

/** The chain's quote for the op's L1 part, or undefined on an "l1" chain (there is none). */
export async function quoteL1Part(rpc: Pick<ChainRpc, "request">, kind: GasKind, input: L1FeeInput): Promise<L1Quote | undefined> {
  switch (kind) {
    case "l1":
      return undefined;
    case "op-stack": {
      // The oracle adds the 68 bytes of a signature itself (Fjord: FastLZ size + 68).
      const data = `0x${GET_L1_FEE}${encodeParts([bytesPart(bundleTransaction(input), "tx")])}` as Hex;
      const answer = await rpc.request<Hex>("eth_call", [{ to: OP_GAS_PRICE_ORACLE, data }, "latest"]);
      return { kind: "wei", wei: firstWord(answer, "GasPriceOracle.getL1Fee") };
    }
    case "scroll": {
      // Scroll's oracle prices the bytes it is given: add a signature's 68 bytes of high entropy.
      const tx = `${bundleTransaction(input)}${highEntropyHex(68, 0x5c2011).slice(2)}` as Hex;
      const answer = await rpc.request<Hex>("eth_call", [{ to: SCROLL_L1_GAS_PRICE_ORACLE, data: `0x${GET_L1_FEE}${encodeParts([bytesPart(tx, "tx")])}` }, "latest"]);
      return { kind: "wei", wei: firstWord(answer, "L1GasPriceOracle.getL1Fee") };
    }
    case "arbitrum": {
      const args = encodeParts([addressWord(input.entryPoint, "to"), uintWord(0n, "contractCreation"), bytesPart(bundleCalldata(input), "data")]);
      const data = `0x${GAS_ESTIMATE_L1_COMPONENT}${args}`;
      const answer = await rpc.request<Hex>("eth_call", [{ to: ARBITRUM_NODE_INTERFACE, data }, "latest"]);
      return { kind: "gas", gas: firstWord(answer, "NodeInterface.gasEstimateL1Component") };
    }
  }
}

/**
 * The L2 price to turn an L1 fee in wei into gas: what the op pays per gas at the current base fee,
 * min(maxFeePerGas, baseFee + maxPriorityFeePerGas), as bundlers compute it. If the base fee falls before
 * inclusion the same wei needs more gas: the margin covers that (OP Stack's base fee falls at most 2% a block).
 */
export function l2GasPrice(fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }, baseFeePerGas: bigint): bigint {
  const price = baseFeePerGas + fees.maxPriorityFeePerGas;
  return fees.maxFeePerGas < price ? fees.maxFeePerGas : price;
}

/** A quote as preVerificationGas on top of the L1 calldata part: wei over the L2 gas price, plus the margin, rounded up. */
export function l1PartAsGas(quote: L1Quote | undefined, l2GasPrice: bigint): bigint {
  if (quote === undefined) return 0n;
  const scale = 10_000n + L1_FEE_MARGIN_BPS;
  if (quote.kind === "gas") return ceilDiv(quote.gas * scale, 10_000n);
  if (l2GasPrice <= 0n) throw new RangeError("l2GasPrice must be positive to price an L1 fee as gas");
  return ceilDiv(quote.wei * scale, l2GasPrice * 10_000n);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/** preVerificationGas the op needs for its L1 data on a chain of `kind` (0 on an "l1" chain). */
export async function l1DataGas(rpc: Pick<ChainRpc, "request">, kind: GasKind, input: L1FeeInput): Promise<bigint> {
  return l1PartAsGas(await quoteL1Part(rpc, kind, input), input.l2GasPrice);
}
