/**
 * Arachnid's deterministic deployment proxy (the CREATE2 factory at 0x4e59b448…4956C) on a chain that lacks
 * it. The proxy is installed by a presigned pre-EIP-155 transaction from a one-time key nobody holds: fund
 * that key with exactly what the transaction costs, then broadcast the raw transaction. It lands at the same
 * address on every chain that accepts unprotected transactions and a 100 gwei gas price; a chain that
 * refuses either cannot have it this way (say so; such chains need another factory). What makes the install
 * impossible is found before anything is funded (create2ProxyInstallBlocker), so no ether is ever stranded
 * with the one-time signer.
 */
import { Transaction, getCreateAddress } from "ethers";
import type { Provider, Signer } from "ethers";
import { CREATE2_DEPLOYER_ADDRESS, CREATE2_DEPLOYER_RUNTIME_CODE } from "./constants.ts";

/** The proxy's presigned creation transaction (nonce 0, gas price 100 gwei, gas 100,000, no chain id). */
export const CREATE2_PROXY_PRESIGNED_TX =
  "0xf8a58085174876e800830186a08080b853604580600e600039806000f350fe7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf31ba02222222222222222222222222222222222222222222222222222222222222222a02222222222222222222222222222222222222222222222222222222222222222" as const;

/** The one-time key that signed it (recovered from the transaction, checked by the tests). */
export const CREATE2_PROXY_SIGNER = "0x3fAB184622Dc19b6109349B94811493BF2a45362" as const;

/** The presigned transaction's gas price (100 gwei): while the base fee is above it, it is never mined. */
export const CREATE2_PROXY_GAS_PRICE = 100_000_000_000n;

/** What the presigned transaction costs its signer: gas limit x gas price (0.01 ETH). */
export const CREATE2_PROXY_FUNDING = 100_000n * CREATE2_PROXY_GAS_PRICE;

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
 * Why the proxy cannot be installed from its presigned transaction on this chain, or undefined if it can:
 * the proxy's address already used (a non-zero nonce: no contract can be created there any more), the one-time
 * signer's nonce 0 already spent, a base fee above the transaction's 100 gwei, or a node that refuses
 * unprotected (pre-EIP-155) transactions, as geth does over RPC by default. The last is probed by offering the
 * node the transaction while its signer is still unfunded: only "insufficient funds" means the node would take
 * it, so nothing can land (when the signer is already funded there is nothing to strand, and no probe).
 */
export async function create2ProxyInstallBlocker(provider: Provider): Promise<string | undefined> {
  const parsed = Transaction.from(CREATE2_PROXY_PRESIGNED_TX);
  if (parsed.from !== CREATE2_PROXY_SIGNER || getCreateAddress({ from: CREATE2_PROXY_SIGNER, nonce: 0 }) !== CREATE2_DEPLOYER_ADDRESS) {
    throw new Error("installCreate2Proxy: the presigned transaction does not create the proxy"); // guards the constants
  }
  const [proxyNonce, signerNonce, balance, block] = await Promise.all([
    provider.getTransactionCount(CREATE2_DEPLOYER_ADDRESS),
    provider.getTransactionCount(CREATE2_PROXY_SIGNER),
    provider.getBalance(CREATE2_PROXY_SIGNER),
    provider.getBlock("latest"),
  ]);
  if (proxyNonce !== 0) {
    return `the proxy's address ${CREATE2_DEPLOYER_ADDRESS} already has nonce ${proxyNonce} on this chain, so no contract can be created there`;
  }
  if (signerNonce !== 0) {
    return `its one-time signer ${CREATE2_PROXY_SIGNER} has already used nonce 0 on this chain`;
  }
  const baseFee = block?.baseFeePerGas ?? 0n;
  if (baseFee > CREATE2_PROXY_GAS_PRICE) {
    return `the base fee (${baseFee} wei) is above the 100 gwei the presigned transaction pays, so it would not be mined`;
  }
  if (balance >= CREATE2_PROXY_FUNDING) return undefined;
  try {
    await rawSend(provider)("eth_sendRawTransaction", [CREATE2_PROXY_PRESIGNED_TX]);
  } catch (error) {
    if (isInsufficientFunds(error)) return undefined;
    return `the node refuses its presigned pre-EIP-155 transaction (${nodeMessage(error)})`;
  }
  return undefined; // the node queued it unfunded: the funding below makes it minable
}

/** Throws a clear error naming the reason when the proxy cannot be installed here (nothing has been sent). */
export async function assertCreate2ProxyInstallable(provider: Provider): Promise<void> {
  const blocker = await create2ProxyInstallBlocker(provider);
  if (blocker === undefined) return;
  throw new Error(
    `the CREATE2 deployer proxy ${CREATE2_DEPLOYER_ADDRESS} is missing on this chain and cannot be installed from its presigned transaction: ` +
      `${blocker}. Nothing was sent. Such a chain needs the proxy deployed by its operators (or another deterministic factory).`,
  );
}

/**
 * Installs the proxy from its presigned transaction: checks first that it can be installed (nothing is funded
 * otherwise), tops the one-time signer up to the funding, then broadcasts the raw transaction.
 */
export async function installCreate2Proxy(funder: Signer, log: (line: string) => void = () => {}): Promise<void> {
  const provider = funder.provider;
  if (provider === null) throw new Error("installCreate2Proxy: the funding signer has no provider");
  await assertCreate2ProxyInstallable(provider);
  const balance = await provider.getBalance(CREATE2_PROXY_SIGNER);
  if (balance < CREATE2_PROXY_FUNDING) {
    const funding = await funder.sendTransaction({ to: CREATE2_PROXY_SIGNER, value: CREATE2_PROXY_FUNDING - balance });
    const receipt = await funding.wait();
    if (receipt === null || receipt.status !== 1) throw new Error(`funding the CREATE2 proxy's signer failed (transaction ${funding.hash})`);
    log(`funded the CREATE2 proxy's one-time signer ${CREATE2_PROXY_SIGNER} (${funding.hash})`);
  }
  let hash: string;
  try {
    hash = String(await rawSend(provider)("eth_sendRawTransaction", [CREATE2_PROXY_PRESIGNED_TX]));
  } catch (error) {
    throw new Error(
      "the node refused the CREATE2 proxy's presigned transaction (a pre-EIP-155 transaction at 100 gwei): this chain cannot " +
        `have Arachnid's proxy installed this way (${nodeMessage(error)})`,
      { cause: error },
    );
  }
  const receipt = await provider.waitForTransaction(hash);
  if (receipt === null || receipt.status !== 1 || (await create2ProxyState(provider)) !== "present") {
    throw new Error(`the CREATE2 proxy's presigned transaction ${hash} did not install it`);
  }
  log(`installed the CREATE2 deployer proxy at ${CREATE2_DEPLOYER_ADDRESS} (${hash})`);
}

/** The provider's raw JSON-RPC send (JsonRpcProvider.send). */
function rawSend(provider: Provider): (method: string, params: unknown[]) => Promise<unknown> {
  const send = (provider as { send?: (method: string, params: unknown[]) => Promise<unknown> }).send;
  if (typeof send !== "function") throw new Error("installCreate2Proxy: the provider cannot broadcast a raw transaction");
  return (method, params) => send.call(provider, method, params);
}

/** The node's own error message under ethers' wrapping (error.info.error.message), else ethers' short message. */
function nodeMessage(error: unknown): string {
  const e = error as { shortMessage?: string; message?: string; info?: { error?: { message?: string } }; error?: { message?: string } };
  return String(e.info?.error?.message ?? e.error?.message ?? e.shortMessage ?? e.message ?? error).slice(0, 200);
}

/** "Cannot pay for it" as nodes word it: geth/reth/erigon, Hardhat EDR, Besu, Nethermind. */
const INSUFFICIENT_FUNDS = /insufficient ?funds|doesn't have enough funds|upfront cost exceeds account balance/i;

function isInsufficientFunds(error: unknown): boolean {
  return (error as { code?: string }).code === "INSUFFICIENT_FUNDS" || INSUFFICIENT_FUNDS.test(nodeMessage(error));
}
