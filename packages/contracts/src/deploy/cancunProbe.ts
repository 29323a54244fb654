/**
 * The EVM the contracts need: Cancun or later. Every contract here is compiled for Cancun (solc emits MCOPY,
 * EIP-5656) and the ERC-20 paymasters keep per-transaction state in transient storage (TSTORE/TLOAD, EIP-1153). On
 * an older EVM (Shanghai rules) they deploy, and then their calls hit an invalid opcode: every ERC-20 validation
 * reverts. So a deployment first asks the chain to run all three: an eth_call with no `to` whose init code uses
 * TSTORE, TLOAD and MCOPY and returns a marker. A Cancun chain answers the marker; an older one answers an error.
 */
import type { Provider } from "ethers";

/** The word the probe returns: "CANCUN" in ASCII, right-aligned. */
export const CANCUN_PROBE_MARKER = "0x000000000000000000000000000000000000000000000000000043414e43554e" as const;

/**
 * Init code: TSTORE(0, marker); MSTORE(0, TLOAD(0)); MCOPY(32, 0, 32); RETURN(32, 32).
 * 65 43414e43554e  PUSH6 "CANCUN"     60 00 5d  TSTORE at 0      60 00 5c  TLOAD 0
 * 60 00 52         MSTORE at 0        60 20 60 00 60 20 5e  MCOPY 32 bytes from 0 to 32
 * 60 20 60 20 f3   RETURN the 32 bytes at 32
 */
export const CANCUN_PROBE_INIT_CODE = "0x6543414e43554e60005d60005c6000526020600060205e60206020f3" as const;

/**
 * How nodes word an opcode their EVM does not have: geth and erigon "invalid opcode: TSTORE", Nethermind
 * "BadInstruction", Besu "INVALID_OPERATION", revm-based nodes "OpcodeNotFound" / "NotActivated".
 */
const EVM_REFUSAL = /opcode|instruction|invalid.?operation|not.?activated/i;

/**
 * Why the chain cannot run the contracts, or undefined when it runs the probe. A node that refuses the probe's
 * opcodes, or answers something other than the marker, is refused. Any other error (unreachable, a provider's
 * rate limit, a node that takes no eth_call without `to`) is no verdict on its EVM: it is thrown, saying so.
 */
export async function cancunMissing(provider: Provider): Promise<string | undefined> {
  let answer: string;
  try {
    answer = await provider.call({ data: CANCUN_PROBE_INIT_CODE });
  } catch (error) {
    const nodeError = (error as { info?: { error?: { message?: unknown } } }).info?.error;
    if (nodeError === undefined) throw error;
    const message = String(nodeError.message ?? "no message").slice(0, 200);
    if (!EVM_REFUSAL.test(message)) throw new Error(`the node did not answer the Cancun probe (an eth_call of code using TSTORE, TLOAD and MCOPY): ${message}. Nothing was sent; try again.`);
    return `It refused code using TSTORE, TLOAD and MCOPY: ${message}`;
  }
  if (answer.toLowerCase() === CANCUN_PROBE_MARKER) return undefined;
  return `Code using TSTORE, TLOAD and MCOPY answered ${answer.slice(0, 80)} instead of the marker`;
}

/**
 * Throws a clear error naming the missing fork when the chain does not run Cancun (nothing has been sent). One line,
 * what matters first: operator commands show the first 300 characters of an error.
 */
export async function assertCancun(provider: Provider, chainId: number): Promise<void> {
  const reason = await cancunMissing(provider);
  if (reason === undefined) return;
  throw new Error(
    `chain ${chainId} does not run the Cancun EVM, which the contracts need (EVM: Cancun or later: EIP-1153 transient ` +
      `storage, EIP-5656 MCOPY). Nothing was sent. ${reason}`,
  );
}
