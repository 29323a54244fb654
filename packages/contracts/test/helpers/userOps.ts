// Building, sponsoring, signing and submitting user operations the same way for EntryPoint v0.6, v0.7 and v0.8.
import { Contract, Interface, Wallet, concat, dataSlice, getBytes, toBeHex, zeroPadValue, type Signer } from "ethers";
import {
  encodeErc20PaymasterData,
  encodeVerifyingPaymasterData,
  erc20PaymasterHash,
  packUserOpV07,
  STUB_MAX_TOKEN_CHARGE,
  verifyingPaymasterHash,
  type EntryPointVersion,
  type Hex,
  type UserOperationV06,
  type UserOperationV07,
} from "@paymaster/shared";
import { EntryPointSimulatorV07Artifact, EntryPointSimulatorV08Artifact } from "../../src/artifacts.ts";
import { ethers, type Stack } from "./stack.ts";

export const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7", "v0.8"];

/** One shape for both versions; v0.6 ignores the paymaster gas limits. */
export interface TestOp {
  sender: string;
  nonce: bigint;
  initCode: string;
  callData: string;
  callGasLimit: bigint;
  verificationGasLimit: bigint;
  preVerificationGas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  paymaster: string;
  paymasterVerificationGasLimit: bigint;
  paymasterPostOpGasLimit: bigint;
  paymasterData: string;
  signature: string;
}

export interface Window {
  validUntil: number;
  validAfter: number;
}

export interface TokenFields {
  token: string;
  exchangeRate: bigint;
  chargeMode: 0 | 1;
  /** The signed cap on the charge; absent: no cap (2^256 - 1), so the charge is the contract's own figure. */
  maxTokenCharge?: bigint;
}

/** The token fields as signed: maxTokenCharge filled in (no cap when absent). */
export function signedTokenFields(t: TokenFields) {
  return { ...t, token: t.token as Hex, maxTokenCharge: t.maxTokenCharge ?? STUB_MAX_TOKEN_CHARGE };
}

export type PaymasterKind = "verifying" | "erc20";

const accountInterface = {
  "v0.6": new Interface([
    "function execute(address dest, uint256 value, bytes func)",
    "function executeBatch(address[] dest, bytes[] func)",
  ]),
  "v0.7": new Interface([
    "function execute(address dest, uint256 value, bytes func)",
    "function executeBatch(address[] dest, uint256[] value, bytes[] func)",
  ]),
  // v0.8's BaseAccount: executeBatch takes Call{target, value, data}[].
  "v0.8": new Interface([
    "function execute(address target, uint256 value, bytes data)",
    "function executeBatch((address target, uint256 value, bytes data)[] calls)",
  ]),
};

/** callData for the account executing `calls` (one call -> execute, several -> executeBatch). */
export function accountCallData(version: EntryPointVersion, calls: { to: string; value?: bigint; data: string }[]): string {
  const iface = accountInterface[version];
  if (calls.length === 1) {
    const [call] = calls;
    return iface.encodeFunctionData("execute", [call!.to, call!.value ?? 0n, call!.data]);
  }
  const targets = calls.map((c) => c.to);
  const data = calls.map((c) => c.data);
  if (version === "v0.8") return iface.encodeFunctionData("executeBatch", [calls.map((c) => [c.to, c.value ?? 0n, c.data])]);
  return version === "v0.6"
    ? iface.encodeFunctionData("executeBatch", [targets, data])
    : iface.encodeFunctionData("executeBatch", [targets, calls.map((c) => c.value ?? 0n), data]);
}

/** A counterfactual SimpleAccount of `owner`: its address and the initCode that deploys it. */
export async function newAccount(stack: Stack, version: EntryPointVersion, owner: string, salt = 0n) {
  const factory = stack.v[version].factory;
  const address: string = await factory.getFunction("getAddress")(owner, salt);
  const initCode = concat([await factory.getAddress(), factory.interface.encodeFunctionData("createAccount", [owner, salt])]);
  return { address, initCode };
}

/** Fees comfortably above the current base fee. */
export async function currentFees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
  const block = await ethers.provider.getBlock("latest");
  const base = block?.baseFeePerGas ?? 1_000_000_000n;
  const maxPriorityFeePerGas = 1_000_000_000n;
  return { maxFeePerGas: base * 2n + maxPriorityFeePerGas, maxPriorityFeePerGas };
}

/** An op with generous limits, not yet sponsored nor signed. */
export async function draftOp(fields: Partial<TestOp> & { sender: string; callData: string }): Promise<TestOp> {
  return {
    nonce: 0n,
    initCode: "0x",
    callGasLimit: 200_000n,
    verificationGasLimit: 600_000n,
    preVerificationGas: 60_000n,
    ...(await currentFees()),
    paymaster: "0x",
    paymasterVerificationGasLimit: 150_000n,
    paymasterPostOpGasLimit: 120_000n,
    paymasterData: "0x",
    signature: "0x",
    ...fields,
  };
}

export function toUserOpV06(op: TestOp): UserOperationV06 {
  return {
    sender: op.sender as Hex,
    nonce: op.nonce,
    initCode: op.initCode as Hex,
    callData: op.callData as Hex,
    callGasLimit: op.callGasLimit,
    verificationGasLimit: op.verificationGasLimit,
    preVerificationGas: op.preVerificationGas,
    maxFeePerGas: op.maxFeePerGas,
    maxPriorityFeePerGas: op.maxPriorityFeePerGas,
    paymasterAndData: (op.paymaster === "0x" ? "0x" : concat([op.paymaster, op.paymasterData])) as Hex,
    signature: op.signature as Hex,
  };
}

export function toUserOpV07(op: TestOp): UserOperationV07 {
  const hasFactory = op.initCode !== "0x";
  const hasPaymaster = op.paymaster !== "0x";
  return {
    sender: op.sender as Hex,
    nonce: op.nonce,
    ...(hasFactory ? { factory: dataSlice(op.initCode, 0, 20) as Hex, factoryData: dataSlice(op.initCode, 20) as Hex } : {}),
    callData: op.callData as Hex,
    callGasLimit: op.callGasLimit,
    verificationGasLimit: op.verificationGasLimit,
    preVerificationGas: op.preVerificationGas,
    maxFeePerGas: op.maxFeePerGas,
    maxPriorityFeePerGas: op.maxPriorityFeePerGas,
    ...(hasPaymaster
      ? {
          paymaster: op.paymaster as Hex,
          paymasterVerificationGasLimit: op.paymasterVerificationGasLimit,
          paymasterPostOpGasLimit: op.paymasterPostOpGasLimit,
          paymasterData: op.paymasterData as Hex,
        }
      : {}),
    signature: op.signature as Hex,
  };
}

/** The struct the version's EntryPoint takes (v0.6 UserOperation, v0.7/v0.8 PackedUserOperation). */
export function toChainOp(version: EntryPointVersion, op: TestOp) {
  return version === "v0.6" ? toUserOpV06(op) : packUserOpV07(toUserOpV07(op));
}

/** The paymaster hash computed off-chain by @paymaster/shared. */
export function offChainPaymasterHash(
  version: EntryPointVersion,
  kind: PaymasterKind,
  op: TestOp,
  chainId: bigint,
  paymaster: string,
  window: Window,
  tokenFields?: TokenFields,
  eip7702Delegate?: string,
): Hex {
  const userOp = version === "v0.6" ? toUserOpV06(op) : toUserOpV07(op);
  const common = { version, userOp, chainId, paymaster: paymaster as Hex, ...window, eip7702Delegate: eip7702Delegate as Hex | undefined } as const;
  if (kind === "verifying") return verifyingPaymasterHash(common as Parameters<typeof verifyingPaymasterHash>[0]);
  if (!tokenFields) throw new Error("erc20 hash needs token fields");
  return erc20PaymasterHash({ ...common, ...signedTokenFields(tokenFields) } as Parameters<
    typeof erc20PaymasterHash
  >[0]);
}

/** The paymaster's on-chain getHash for the op. */
export async function onChainPaymasterHash(
  version: EntryPointVersion,
  paymaster: Contract,
  op: TestOp,
  window: Window,
  tokenFields?: TokenFields,
): Promise<string> {
  const chainOp = toChainOp(version, op);
  if (!tokenFields) return paymaster.getFunction("getHash")(chainOp, window.validUntil, window.validAfter);
  const t = signedTokenFields(tokenFields);
  return paymaster.getFunction("getHash")(chainOp, window.validUntil, window.validAfter, t.token, t.exchangeRate, t.chargeMode, t.maxTokenCharge);
}

/**
 * A window that is valid now: validAfter slightly in the past, validUntil 5 minutes ahead, from the timestamp the
 * next block will have. Not the latest block's: once a fixture snapshot is restored the chain's clock runs on with
 * the wall clock, so after a long test file the latest block can be more than 5 minutes old (AA32).
 */
export async function validWindow(): Promise<Window> {
  const pending = (await ethers.provider.send("eth_getBlockByNumber", ["pending", false])) as { timestamp: string };
  const now = Number(pending.timestamp);
  return { validUntil: now + 300, validAfter: now - 60 };
}

/** paymasterData without a signature yet: the fields the hash covers. */
export function paymasterDataFor(kind: PaymasterKind, window: Window, signature: string, tokenFields?: TokenFields): string {
  if (kind === "verifying") return encodeVerifyingPaymasterData(window, signature as Hex);
  if (!tokenFields) throw new Error("erc20 paymaster data needs token fields");
  return encodeErc20PaymasterData({ ...window, ...signedTokenFields(tokenFields) }, signature as Hex);
}

export interface SponsorOptions {
  kind: PaymasterKind;
  paymaster: Contract;
  signer: Wallet;
  window?: Window;
  tokenFields?: TokenFields;
  /** Hash for another chain id (replay tests). */
  chainId?: bigint;
  /** Hash for another paymaster address (replay tests). */
  hashPaymaster?: string;
  /** 7702 senders (v0.8 marker ops; any version without initCode): the delegate the hash binds (replay tests sign for another one). */
  eip7702Delegate?: string;
}

/** Sets the paymaster fields and the signer's signature over the off-chain hash. */
export async function sponsor(stack: Stack, version: EntryPointVersion, op: TestOp, opts: SponsorOptions): Promise<TestOp> {
  const window = opts.window ?? (await validWindow());
  const paymaster = await opts.paymaster.getAddress();
  const sponsored = { ...op, paymaster };
  const hash = offChainPaymasterHash(
    version,
    opts.kind,
    sponsored,
    opts.chainId ?? stack.chainId,
    opts.hashPaymaster ?? paymaster,
    window,
    opts.tokenFields,
    opts.eip7702Delegate,
  );
  const signature = await opts.signer.signMessage(getBytes(hash));
  return { ...sponsored, paymasterData: paymasterDataFor(opts.kind, window, signature, opts.tokenFields) };
}

/**
 * The account owner's signature over the EntryPoint's userOpHash: SimpleAccount v0.6/v0.7 recover an EIP-191
 * message; v0.8's userOpHash is already an EIP-712 digest, which its SimpleAccount recovers as is.
 */
export async function signAsOwner(stack: Stack, version: EntryPointVersion, op: TestOp, owner: Wallet): Promise<TestOp> {
  const userOpHash: string = await stack.v[version].entryPoint.getFunction("getUserOpHash")(toChainOp(version, op));
  const signature = version === "v0.8" ? owner.signingKey.sign(userOpHash).serialized : await owner.signMessage(getBytes(userOpHash));
  return { ...op, signature };
}

/** Submits the ops through handleOps from a bundler EOA. */
export async function handleOps(stack: Stack, version: EntryPointVersion, ops: TestOp[], bundler?: Signer) {
  const entryPoint = bundler ? (stack.v[version].entryPoint.connect(bundler) as Contract) : stack.v[version].entryPoint;
  return entryPoint.getFunction("handleOps")(
    ops.map((op) => toChainOp(version, op)),
    stack.beneficiary,
    { gasLimit: 10_000_000n },
  );
}

/**
 * preOpGas of `op` (v0.7/v0.8) as its EntryPoint measures it (validation's gas + preVerificationGas), which postOp is
 * never told: simulateHandleOp of our EntryPoint simulator, run at the EntryPoint's address through a state override.
 */
export async function simulatedPreOpGas(stack: Stack, version: EntryPointVersion, op: TestOp): Promise<bigint> {
  if (version === "v0.6") throw new Error("simulatedPreOpGas: v0.7 and v0.8 only");
  const simulator = version === "v0.7" ? EntryPointSimulatorV07Artifact : EntryPointSimulatorV08Artifact;
  const iface = new Interface(simulator.abi as unknown as string);
  const entryPoint = await stack.v[version].entryPoint.getAddress();
  const data = iface.encodeFunctionData("simulateHandleOp", [toChainOp(version, op), "0x0000000000000000000000000000000000000000", "0x"]);
  const output = (await ethers.provider.send("eth_call", [{ to: entryPoint, data }, "latest", { [entryPoint]: { code: simulator.deployedBytecode } }])) as string;
  return (iface.decodeFunctionResult("simulateHandleOp", output)[0] as { preOpGas: bigint }).preOpGas;
}

/** The arguments of every `name` event `contract` emitted in a mined transaction, in log order. */
export async function eventArgs(contract: Contract, tx: { hash: string }, name: string) {
  const receipt = await ethers.provider.getTransactionReceipt(tx.hash);
  const address = await contract.getAddress();
  return receipt!.logs
    .filter((log) => log.address === address)
    .map((log) => contract.interface.parseLog(log))
    .filter((parsed) => parsed?.name === name)
    .map((parsed) => parsed!.args);
}

/** The UserOperationEvents of a mined handleOps transaction, in bundle order. */
export async function userOperationEvents(stack: Stack, version: EntryPointVersion, tx: { hash: string }) {
  return (await eventArgs(stack.v[version].entryPoint, tx, "UserOperationEvent")).map((args) => ({
    userOpHash: args.userOpHash as string,
    sender: args.sender as string,
    paymaster: args.paymaster as string,
    success: args.success as boolean,
    actualGasCost: args.actualGasCost as bigint,
    actualGasUsed: args.actualGasUsed as bigint,
  }));
}

/** The (first) UserOperationEvent of a mined handleOps transaction. */
export async function userOperationEvent(stack: Stack, version: EntryPointVersion, tx: { hash: string }) {
  const [event] = await userOperationEvents(stack, version, tx);
  if (event === undefined) throw new Error("no UserOperationEvent in the receipt");
  return event;
}

/** A fresh owner key for a fresh account. */
export function randomOwner(): Wallet {
  return new Wallet(Wallet.createRandom().privateKey, ethers.provider);
}

/** 2-D nonce: key in the high 192 bits, sequence in the low 64. */
export function nonceWithKey(key: bigint, sequence = 0n): bigint {
  return (key << 64n) | sequence;
}

export { toBeHex, zeroPadValue };
