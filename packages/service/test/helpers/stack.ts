// The embedded stack for service tests: a real local chain, a real SQLite file, the service on 127.0.0.1 —
// plus the wallet side: building ops, asking the service over HTTP, signing as the account owner, submitting.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeEventLog, decodeErrorResult, encodeFunctionData, getAddress, toHex, type Abi } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import {
  EntryPointV06Artifact,
  EntryPointV07Artifact,
  EntryPointV08Artifact,
  ERC20PaymasterV06Artifact,
  SimpleAccountFactoryV06Artifact,
  TestTokenArtifact,
} from "@paymaster/contracts/artifacts";
import {
  EIP7702_MARKER,
  STUB_SIGNATURE,
  getUserOpHash,
  packUserOpV07,
  type Address,
  type Eip7702Authorization,
  type EntryPointVersion,
  type Hex,
  type UserOperationV06,
  type UserOperationV07,
  type UserOperationV08,
} from "@paymaster/shared";
import { approveCallData, embeddedConfig, executeCallData, startEmbedded, type Embedded, type EmbeddedOptions } from "../../src/local/embedded.ts";
import { localNetworkConfig } from "../../src/config/local.ts";
import { startService, type RunningService } from "../../src/server.ts";
import { createTestDatabase } from "./postgres.ts";
import type { AdminApiOptions } from "../../src/adminApi/options.ts";
import type { SponsorshipRecord, Store } from "../../src/store/types.ts";
import type { SponsorMode } from "../../src/policy/types.ts";

export type { Embedded };

/** The embedded stack on free ports; `admin`: also the admin API and the console on their own listener. */
export async function startTestStack(
  options: { chainType?: "l1" | "op"; admin?: AdminApiOptions; databaseUrl?: string; webhookDestinations?: readonly string[]; bundler?: EmbeddedOptions["bundler"]; tracingEnv?: NodeJS.ProcessEnv } = {},
): Promise<Embedded> {
  return startEmbedded({
    ...options,
    chainPort: 0,
    servicePort: 0,
    dataDir: path.join(mkdtempSync(path.join(tmpdir(), "paymaster-test-")), "data"),
    logLevel: "silent",
    pollMs: 100,
  });
}

export interface Envelope<T = any> {
  code: number;
  message: string;
  data: T;
  cost: string;
}

/** POST a v1 request; returns the HTTP status and the parsed envelope. */
export async function call<T = any>(endpoint: string, method: string, params?: unknown[]): Promise<{ status: number; body: Envelope<T> }> {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ id: 1, jsonrpc: "2.0", method, ...(params ? { params } : {}) }),
  });
  return { status: response.status, body: (await response.json()) as Envelope<T> };
}

/** JSON-RPC straight to the local chain. */
export async function chainRequest<T>(embedded: Embedded, method: string, params: unknown[] = []): Promise<T> {
  return (await embedded.stack.chain.provider.request({ method, params })) as T;
}

export async function ethCall(embedded: Embedded, to: Address, abi: Abi, functionName: string, args: unknown[] = []): Promise<any> {
  const data = encodeFunctionData({ abi, functionName, args });
  const { decodeFunctionResult } = await import("viem");
  return decodeFunctionResult({ abi, functionName, data: await chainRequest<Hex>(embedded, "eth_call", [{ to, data }, "latest"]) });
}

/** Sends a transaction from an unlocked dev account; with `authorizations`, a type-4 transaction carrying them. */
export async function sendTx(embedded: Embedded, to: Address, data: Hex, from: Address = embedded.stack.owner.address, authorizations: Eip7702Authorization[] = []) {
  const authorizationList = authorizations.map((a) => ({ chainId: toHex(a.chainId), address: a.address, nonce: toHex(a.nonce), yParity: toHex(a.yParity), r: a.r, s: a.s }));
  const hash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from, to, data, gas: "0x989680", ...(authorizationList.length > 0 ? { authorizationList } : {}) }]);
  return chainRequest<{ status: Hex; logs: { address: Address; topics: Hex[]; data: Hex }[] }>(embedded, "eth_getTransactionReceipt", [hash]);
}

export interface Wallet {
  owner: PrivateKeyAccount;
  version: EntryPointVersion;
  sender: Address;
  initCode: Hex;
  /** An EIP-7702 wallet (v0.8): the owner EOA is the sender, and this authorization delegates it. */
  authorization?: Eip7702Authorization;
}

/** A fresh owner and its counterfactual SimpleAccount (salt 0) for `version`. */
export async function newWallet(embedded: Embedded, version: EntryPointVersion): Promise<Wallet> {
  const owner = privateKeyToAccount(generatePrivateKey());
  const factory = embedded.stack.manifest.entryPoints[version].simpleAccountFactory;
  const abi = SimpleAccountFactoryV06Artifact.abi as Abi; // same createAccount/getAddress in v0.7
  const sender = (await ethCall(embedded, factory, abi, "getAddress", [owner.address, 0n])) as Address;
  const createAccount = encodeFunctionData({ abi, functionName: "createAccount", args: [owner.address, 0n] });
  return { owner, version, sender, initCode: `${factory}${createAccount.slice(2)}` as Hex };
}

/** A fresh EOA delegating (EIP-7702, v0.8) to the stack's Simple7702Account: its signed authorization (nonce 0). */
export async function new7702Wallet(embedded: Embedded): Promise<Wallet> {
  const owner = privateKeyToAccount(generatePrivateKey());
  const chainId = embedded.stack.chain.chainId;
  const delegate = embedded.stack.manifest.entryPoints["v0.8"].simple7702Account!;
  const signed = await owner.signAuthorization({ address: delegate, chainId, nonce: 0 });
  const authorization = { chainId: BigInt(chainId), address: delegate, nonce: 0n, r: signed.r, s: signed.s, yParity: signed.yParity ?? 0 };
  return { owner, version: "v0.8", sender: owner.address, initCode: EIP7702_MARKER, authorization };
}

/** eip7702Auth as wallets send it (hex quantities). */
export function eip7702AuthWire(auth: Eip7702Authorization) {
  return { chainId: toHex(auth.chainId), address: auth.address, nonce: toHex(auth.nonce), r: auth.r, s: auth.s, yParity: toHex(auth.yParity) };
}

/**
 * The wire userOp a wallet sends: hex fields, gas left for the service to fill, a stub signature. A 7702
 * wallet's first op carries the marker (factory "0x7702") and its authorization.
 */
export function wireOp(wallet: Wallet, callData: Hex, { deploy = true, nonce = 0n, extra = {} }: { deploy?: boolean; nonce?: bigint; extra?: Record<string, string> } = {}) {
  const base = { sender: wallet.sender, nonce: `0x${nonce.toString(16)}`, callData, signature: STUB_SIGNATURE, ...extra };
  if (!deploy) return base;
  if (wallet.authorization) return { ...base, factory: "0x7702", factoryData: "0x", eip7702Auth: eip7702AuthWire(wallet.authorization) };
  return wallet.version === "v0.6"
    ? { ...base, initCode: wallet.initCode }
    : { ...base, factory: `0x${wallet.initCode.slice(2, 42)}`, factoryData: `0x${wallet.initCode.slice(42)}` };
}

/** The domain op the EntryPoint will see: the wallet's fields plus what the service returned. */
export function opFromResponse(
  wallet: Wallet,
  wire: ReturnType<typeof wireOp>,
  response: any,
): { version: "v0.6"; userOp: UserOperationV06 } | { version: "v0.7" | "v0.8"; userOp: UserOperationV07 } {
  const r = response.userOpResponse;
  const gas = {
    callGasLimit: BigInt(r.callGasLimit),
    verificationGasLimit: BigInt(r.verificationGasLimit),
    preVerificationGas: BigInt(r.preVerificationGas),
    maxFeePerGas: BigInt(r.maxFeePerGas),
    maxPriorityFeePerGas: BigInt(r.maxPriorityFeePerGas),
  };
  const w = wire as Record<string, string>;
  const factory = w.factory === "0x7702" ? EIP7702_MARKER : (w.factory as Address | undefined);
  if (wallet.version === "v0.6") {
    return {
      version: "v0.6",
      userOp: { sender: wallet.sender, nonce: BigInt(w.nonce!), initCode: (w.initCode ?? "0x") as Hex, callData: w.callData as Hex, ...gas, paymasterAndData: r.paymasterAndData, signature: "0x" },
    };
  }
  const pmd: Hex = r.paymasterAndData;
  return {
    version: wallet.version,
    userOp: {
      sender: wallet.sender,
      nonce: BigInt(w.nonce!),
      ...(factory ? { factory, factoryData: w.factoryData as Hex } : {}),
      ...("eip7702Auth" in wire && wallet.authorization ? { eip7702Auth: wallet.authorization } : {}),
      callData: w.callData as Hex,
      ...gas,
      paymaster: `0x${pmd.slice(2, 42)}` as Address,
      paymasterVerificationGasLimit: BigInt(r.paymasterVerificationGasLimit),
      paymasterPostOpGasLimit: BigInt(r.paymasterPostOpGasLimit),
      paymasterData: `0x${pmd.slice(106)}` as Hex,
      signature: "0x",
    },
  };
}

/**
 * Signs the op as the account owner: SimpleAccount v0.6/v0.7 recover an EIP-191 message of the userOpHash;
 * v0.8's userOpHash is an EIP-712 digest, which its SimpleAccount recovers as is.
 */
export async function signAsOwner(embedded: Embedded, wallet: Wallet, op: ReturnType<typeof opFromResponse>) {
  const entryPoint = embedded.stack.manifest.entryPoints[op.version].entryPoint;
  const hash = getUserOpHash({ ...op, entryPoint, chainId: embedded.stack.chain.chainId } as Parameters<typeof getUserOpHash>[0]);
  const signature = op.version === "v0.8" ? await wallet.owner.sign({ hash }) : await wallet.owner.signMessage({ message: { raw: hash } });
  return { ...op, userOp: { ...op.userOp, signature } } as typeof op;
}

const entryPointAbi = { "v0.6": EntryPointV06Artifact.abi as Abi, "v0.7": EntryPointV07Artifact.abi as Abi, "v0.8": EntryPointV08Artifact.abi as Abi };

export interface HandleOpsOutcome {
  reverted: boolean;
  /** The EntryPoint's FailedOp reason when handleOps reverted. */
  failedOp?: string;
  event?: { success: boolean; actualGasCost: bigint; actualGasUsed: bigint; paymaster: Address; userOpHash: Hex };
  logs: { address: Address; topics: Hex[]; data: Hex }[];
}

/** Submits the op with handleOps from a dev account (the bundler), in a type-4 transaction when it carries an EIP-7702 authorization. */
export async function handleOps(embedded: Embedded, op: ReturnType<typeof opFromResponse>): Promise<HandleOpsOutcome> {
  const { version } = op;
  const entryPoint = embedded.stack.manifest.entryPoints[version].entryPoint;
  const chainOp = version === "v0.6" ? op.userOp : packUserOpV07(op.userOp as UserOperationV07);
  const beneficiary = embedded.stack.chain.accounts[9]!.address;
  const data = encodeFunctionData({ abi: entryPointAbi[version], functionName: "handleOps", args: [[chainOp], beneficiary] });
  try {
    const authorization = version === "v0.8" ? (op.userOp as UserOperationV08).eip7702Auth : undefined;
    const receipt = await sendTx(embedded, entryPoint, data, embedded.stack.chain.accounts[8]!.address, authorization ? [authorization] : []);
    for (const log of receipt.logs) {
      if (log.address.toLowerCase() !== entryPoint.toLowerCase()) continue;
      try {
        const decoded = decodeEventLog({ abi: entryPointAbi[version], data: log.data, topics: log.topics as [Hex, ...Hex[]] });
        if (decoded.eventName === "UserOperationEvent") {
          const args = decoded.args as any;
          return { reverted: false, event: { success: args.success, actualGasCost: args.actualGasCost, actualGasUsed: args.actualGasUsed, paymaster: args.paymaster, userOpHash: args.userOpHash }, logs: receipt.logs };
        }
      } catch {
        // another event
      }
    }
    return { reverted: false, logs: receipt.logs };
  } catch (error: any) {
    const revertData: Hex | undefined = error?.data?.data ?? error?.data;
    if (typeof revertData === "string" && revertData.startsWith("0x")) {
      const decoded = decodeErrorResult({ abi: entryPointAbi[version], data: revertData });
      return { reverted: true, failedOp: String((decoded.args as unknown[])[1]), logs: [] };
    }
    const text = String(error?.message ?? error);
    const match = /AA\d\d[^"']*/.exec(text);
    return { reverted: true, failedOp: match ? match[0] : text, logs: [] };
  }
}

export const abis = { erc20Paymaster: ERC20PaymasterV06Artifact.abi as Abi, token: TestTokenArtifact.abi as Abi };

/** Mints test tokens to `to`. */
export async function mint(embedded: Embedded, symbol: "USDC" | "DAI", to: Address, amount: bigint) {
  const token = embedded.stack.manifest.tokens.find((t) => t.symbol === symbol)!;
  await sendTx(embedded, token.address, encodeFunctionData({ abi: abis.token, functionName: "mint", args: [to, amount] }));
}

/**
 * Final gas values for a v0.7/v0.8 op, as a client's bundler estimate gives them (what pm_getPaymasterData needs):
 * limits enough for a fresh SimpleAccount's first call, fees from the latest block's base fee.
 */
export async function clientGasFields(embedded: Embedded): Promise<Record<string, Hex>> {
  const { baseFeePerGas } = await chainRequest<{ baseFeePerGas: Hex }>(embedded, "eth_getBlockByNumber", ["latest", false]);
  return {
    callGasLimit: "0x9c40",
    verificationGasLimit: "0x61a80",
    preVerificationGas: "0xea60",
    maxFeePerGas: toHex(BigInt(baseFeePerGas) * 2n + 1n),
    maxPriorityFeePerGas: "0x1",
  };
}

/** Polls `probe` every 100 ms until it gives a value (not undefined / false); throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Moves the chain's clock forward and mines a block. */
export async function timeTravel(embedded: Embedded, seconds: number) {
  await chainRequest(embedded, "evm_increaseTime", [seconds]);
  await chainRequest(embedded, "evm_mine", []);
}

/** Deploys the v0.7 factory's SimpleAccount of dev account #`ownerIndex` (salt 0) and returns its address. */
export async function deployAccount(embedded: Embedded, ownerIndex: number): Promise<Address> {
  const owner = embedded.stack.chain.accounts[ownerIndex]!.address;
  const factory = embedded.stack.manifest.entryPoints["v0.7"].simpleAccountFactory;
  const abi = SimpleAccountFactoryV06Artifact.abi as Abi;
  await sendTx(embedded, factory, encodeFunctionData({ abi, functionName: "createAccount", args: [owner, 0n] }));
  const word = await chainRequest<Hex>(embedded, "eth_call", [{ to: factory, data: encodeFunctionData({ abi, functionName: "getAddress", args: [owner, 0n] }) }, "latest"]);
  return getAddress(`0x${word.slice(-40)}`);
}

/**
 * Credits a sender's gas tank and lets the project draw from it, as its owner would (User Sponsor mode denies
 * every project a tank has not allowed).
 */
export async function fundTank(store: Store, sender: Address, wei: bigint, projectId: string, reference = `test:${sender}`): Promise<void> {
  await store.creditGasTank("local", sender, wei, reference);
  await allowTank(store, sender, projectId);
}

/** Lets the project draw from the sender's gas tank (on the local network), as its owner would. */
export async function allowTank(store: Store, sender: Address, projectId: string): Promise<void> {
  await store.setGasTankConsent({ network: "local", sender, projectId, allowed: true, changedBy: "test" });
}

/**
 * `count` pm_sponsorUserOperation requests at once, spread over `endpoints` (service replicas), all valid at the
 * same time: one deployed v0.7 account (deployAccount) of dev account #`ownerIndex`, each request on its own 2-D
 * nonce key from `keyBase`. Answers every response, in request order.
 */
export async function sponsorBurst(
  embedded: Embedded,
  endpoints: readonly string[],
  { sender, ownerIndex, extra, keyBase, count = 100 }: { sender: Address; ownerIndex: number; extra: Record<string, string>; keyBase: bigint; count?: number },
) {
  const owner = embedded.stack.chain.accounts[ownerIndex]!.address;
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      call(endpoints[i % endpoints.length]!, "pm_sponsorUserOperation", [
        { sender, nonce: `0x${((keyBase + BigInt(i)) << 64n).toString(16)}`, callData: executeCallData(owner), signature: `0x${"aa".repeat(32)}${"55".repeat(32)}1c` },
        { version: "v0.7", ...extra },
      ]),
    ),
  );
}

/**
 * A fresh account's first op sponsored in `mode` by the embedded stack's demo key (Sponsor mode: the demo strategy;
 * ERC-20 mode: USDC, the op approving the paymaster in its own calls, so charged in postOp; User Sponsor mode: a
 * funded tank that allows the demo project), signed by its owner: ready for handleOps. With its userOpHash and the
 * sponsorship recorded.
 */
export async function sponsorAndSign(embedded: Embedded, version: EntryPointVersion, mode: SponsorMode) {
  const store = embedded.running.service.store;
  const wallet = await newWallet(embedded, version);
  const extra: Record<string, string> = version === "v0.6" ? {} : { version };
  let wire;
  if (mode === "erc20") {
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
    await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
    wire = wireOp(wallet, approveCallData(usdc.address, embedded.stack.manifest.entryPoints[version].erc20Paymaster));
    extra.token = "USDC";
  } else {
    wire = wireOp(wallet, executeCallData(wallet.owner.address));
    if (mode === "sponsor") extra.strategy_code = embedded.strategyCode;
    else await fundTank(store, wallet.sender, 10n ** 17n, embedded.projectId);
  }
  const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extra]);
  if (status !== 200) throw new Error(`not sponsored: ${JSON.stringify(body)}`);
  const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
  const userOpHash = getUserOpHash({ ...op, entryPoint: embedded.stack.manifest.entryPoints[version].entryPoint, chainId: embedded.stack.chain.chainId } as Parameters<typeof getUserOpHash>[0]);
  const record = (await store.findSponsorshipByUserOpHash(userOpHash)) as SponsorshipRecord;
  return { wallet, op, userOpHash, record };
}

/**
 * `count` service replicas of the embedded stack's chain on one throwaway PostgreSQL database (bursts of one
 * account on many nonce keys: the per-sender bound on open reservations is lifted). `close()` stops them and drops it.
 */
export async function startPostgresReplicas(embedded: Embedded, count: number, label: string): Promise<{ services: RunningService[]; close(): Promise<void> }> {
  const database = await createTestDatabase(label);
  const services: RunningService[] = [];
  const close = async () => {
    for (const service of services) await service.close();
    await database.drop();
  };
  try {
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-pg-")), "data");
    for (let i = 0; i < count; i++) {
      services.push(await startService({ ...embeddedConfig(network, dataDir, 0, "silent"), databaseUrl: database.url, reservations: { maxOutstandingPerSender: 1000 } }, { pollMs: 100 }));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { services, close };
}

/** A project with an API key and a strategy on a running service, and the key's two endpoints on the local network. */
export interface ProjectEndpoints {
  /** The v1 dialect (POST /api/v1/paymaster/local?apiKey=…). */
  v1: string;
  /** The standard JSON-RPC dialect (POST /rpc/v1/local?apiKey=…): ERC-7677's methods. */
  standard: string;
  strategyCode: string;
}

/** Creates a project named `name`, an API key and a strategy `strategyCode` in `store`; the key's endpoints on `serviceUrl`. */
export async function projectEndpoints(store: Store, serviceUrl: string, name: string, strategyCode: string): Promise<ProjectEndpoints> {
  const project = await store.createProject(name);
  const { plaintext } = await store.createApiKey(project.id);
  await store.createStrategy({ projectId: project.id, code: strategyCode, name });
  return { v1: `${serviceUrl}/api/v1/paymaster/local?apiKey=${plaintext}`, standard: `${serviceUrl}/rpc/v1/local?apiKey=${plaintext}`, strategyCode };
}
