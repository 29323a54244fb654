/**
 * Arachnid's deterministic deployment proxy (the CREATE2 factory at 0x4e59b448…4956C) on a chain that lacks
 * it. The proxy is installed by a presigned pre-EIP-155 transaction from a one-time key nobody holds: fund
 * that key with exactly what the transaction costs, then broadcast the raw transaction. It lands at the same
 * address on every chain that accepts unprotected transactions and a 100 gwei gas price; a chain that
 * refuses either cannot have it this way (say so; such chains need another factory).
 */
import { Transaction, getCreateAddress } from "ethers";
import type { Provider, Signer } from "ethers";
import { CREATE2_DEPLOYER_ADDRESS, CREATE2_DEPLOYER_RUNTIME_CODE } from "./constants.ts";

/** The proxy's presigned creation transaction (nonce 0, gas price 100 gwei, gas 100,000, no chain id). */
export const CREATE2_PROXY_PRESIGNED_TX =
  "0xf8a58085174876e800830186a08080b853604580600e600039806000f350fe7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf31ba02222222222222222222222222222222222222222222222222222222222222222a02222222222222222222222222222222222222222222222222222222222222222" as const;

/** The one-time key that signed it (recovered from the transaction, checked by the tests). */
export const CREATE2_PROXY_SIGNER = "0x3fAB184622Dc19b6109349B94811493BF2a45362" as const;

/** What the presigned transaction costs its signer: gas limit x gas price (0.01 ETH). */
export const CREATE2_PROXY_FUNDING = 100_000n * 100_000_000_000n;

export type Create2ProxyState = "present" | "missing";

/** Whether the proxy's code is at its address; throws on other code there (a chain we must not deploy on). */
export async function create2ProxyState(provider: Provider): Promise<Create2ProxyState> {
  const code = (await provider.getCode(CREATE2_DEPLOYER_ADDRESS)).toLowerCase();
  if (code === "0x") return "missing";
  if (code !== CREATE2_DEPLOYER_RUNTIME_CODE) {
    throw new Error(`unexpected code at the CREATE2 deployer proxy ${CREATE2_DEPLOYER_ADDRESS}: not Arachnid's deterministic deployment proxy`);
  }
  return "present";
}

/**
 * Installs the proxy from its presigned transaction: tops the one-time signer up to the funding (it must not
 * have sent any transaction: its nonce 0 is the proxy's), then broadcasts the raw transaction.
 */
export async function installCreate2Proxy(funder: Signer, log: (line: string) => void = () => {}): Promise<void> {
  const provider = funder.provider;
  if (provider === null) throw new Error("installCreate2Proxy: the funding signer has no provider");
  const parsed = Transaction.from(CREATE2_PROXY_PRESIGNED_TX);
  if (parsed.from !== CREATE2_PROXY_SIGNER || getCreateAddress({ from: CREATE2_PROXY_SIGNER, nonce: 0 }) !== CREATE2_DEPLOYER_ADDRESS) {
    throw new Error("installCreate2Proxy: the presigned transaction does not create the proxy"); // guards the constants
  }
  const nonce = await provider.getTransactionCount(CREATE2_PROXY_SIGNER);
  if (nonce !== 0) {
    throw new Error(
      `the CREATE2 deployer proxy is missing, and its one-time signer ${CREATE2_PROXY_SIGNER} has already used nonce 0 on this chain: ` +
        "the proxy can no longer be installed from its presigned transaction here",
    );
  }
  const balance = await provider.getBalance(CREATE2_PROXY_SIGNER);
  if (balance < CREATE2_PROXY_FUNDING) {
    const funding = await funder.sendTransaction({ to: CREATE2_PROXY_SIGNER, value: CREATE2_PROXY_FUNDING - balance });
    const receipt = await funding.wait();
    if (receipt === null || receipt.status !== 1) throw new Error(`funding the CREATE2 proxy's signer failed (transaction ${funding.hash})`);
    log(`funded the CREATE2 proxy's one-time signer ${CREATE2_PROXY_SIGNER} (${funding.hash})`);
  }
  const send = (provider as { send?: (method: string, params: unknown[]) => Promise<unknown> }).send;
  if (typeof send !== "function") throw new Error("installCreate2Proxy: the provider cannot broadcast a raw transaction");
  let hash: string;
  try {
    hash = String(await send.call(provider, "eth_sendRawTransaction", [CREATE2_PROXY_PRESIGNED_TX]));
  } catch (error) {
    throw new Error(
      "the node refused the CREATE2 proxy's presigned transaction (a pre-EIP-155 transaction at 100 gwei): this chain cannot " +
        `have Arachnid's proxy installed this way (${(error as Error).message.slice(0, 200)})`,
      { cause: error },
    );
  }
  const receipt = await provider.waitForTransaction(hash);
  if (receipt === null || receipt.status !== 1 || (await create2ProxyState(provider)) !== "present") {
    throw new Error(`the CREATE2 proxy's presigned transaction ${hash} did not install it`);
  }
  log(`installed the CREATE2 deployer proxy at ${CREATE2_DEPLOYER_ADDRESS} (${hash})`);
}
