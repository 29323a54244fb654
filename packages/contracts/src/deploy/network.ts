/**
 * Deployment of the paymasters to any EVM network, as a plan read from the chain and then carried out.
 *
 * Every contract goes through Arachnid's CREATE2 proxy, so it has the same address on every chain:
 * - PaymasterDeployer: at a fixed address (fixed salt, no constructor arguments);
 * - each paymaster: created by PaymasterDeployer with fixed constructor arguments (the deployer contract as
 *   first owner and treasury, no signers, the default postOpGas), so its address depends only on the
 *   deploying key, the salt and the code. In the same transaction PaymasterDeployer adds the signers, sets
 *   treasury, tokens and postOpGas, deposits, stakes, and offers ownership to the real owner, who accepts it
 *   (Ownable2Step; when the owner is the deploying key, the plan accepts it in the next transaction);
 * - GasTankDeposit (where smart accounts fund their gas tanks): the same way, with the deployer contract as its
 *   fixed first owner and no set-up, ownership offered to the same owner.
 *
 * Planning only reads the chain, so a dry run is the plan printed, and a deployment killed halfway and run
 * again plans only what is still missing: contracts found at their address with the expected code are
 * skipped, other code there is refused, deposits and stakes are topped up, never added twice.
 */
import { AbiCoder, Contract, Interface, concat, getAddress, id, keccak256, type Provider, type Signer } from "ethers";
import type { Address, EntryPointVersion } from "../manifest.ts";
import { PaymasterDeployer__factory } from "../../types/ethers-contracts/factories/deploy/PaymasterDeployer.sol/PaymasterDeployer__factory.ts";
import { ERC20PaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/ERC20PaymasterV06__factory.ts";
import { VerifyingPaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/VerifyingPaymasterV06__factory.ts";
import { ERC20PaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/ERC20PaymasterV07__factory.ts";
import { VerifyingPaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/VerifyingPaymasterV07__factory.ts";
import { ERC20PaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/ERC20PaymasterV08__factory.ts";
import { VerifyingPaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/VerifyingPaymasterV08__factory.ts";
import { GasTankDeposit__factory } from "../../types/ethers-contracts/factories/tank/GasTankDeposit__factory.ts";
import {
  CREATE2_DEPLOYER_ADDRESS,
  DEFAULT_MIN_POST_OP_GAS_LIMIT,
  DEFAULT_POST_OP_GAS,
  DEFAULT_UNSTAKE_DELAY_SEC,
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V07_ADDRESS,
  ENTRY_POINT_V08_ADDRESS,
} from "./constants.ts";
import { CREATE2_PROXY_FUNDING, assertCreate2ProxyInstallable, create2ProxyState, installCreate2Proxy } from "./create2Proxy.ts";
import { assertCancun } from "./cancunProbe.ts";

export type PaymasterKind = "verifying" | "erc20";

/** What to deploy and how to set it up. */
export interface NetworkDeployConfig {
  /** The network's name (goes into the manifest). */
  network: string;
  /** EntryPoint versions to deploy paymasters for. */
  versions: readonly EntryPointVersion[];
  /** Owner of every paymaster (accepts ownership; manages signers, tokens, treasury, deposit, stake). */
  owner: Address;
  /** Accepted sponsorship signers (the service's signer keys' addresses). */
  signers: readonly Address[];
  /** Receives the ERC-20 paymasters' token payments. */
  treasury: Address;
  /** Tokens the ERC-20 paymasters accept. */
  tokens: readonly Address[];
  /** Gas the ERC-20 paymasters charge for postOp (default: DEFAULT_POST_OP_GAS of the EntryPoint version). */
  postOpGas?: bigint;
  /** Lowest postOp gas limit the ERC-20 paymasters accept (default DEFAULT_MIN_POST_OP_GAS_LIMIT); measure it for a real token: docs/deploy.md. */
  minPostOpGasLimit?: bigint;
  /** EntryPoint deposit each paymaster is topped up to, in wei. */
  depositTarget: bigint;
  /** Stake of each paymaster in wei (every paymaster reads its own storage in validation, so every one is staked). */
  stakeAmount: bigint;
  /** Unstake delay of each stake, in seconds: at least one day (ERC-7562 MIN_UNSTAKE_DELAY). */
  unstakeDelaySec?: number;
  /** CREATE2 salt of the paymasters (mixed with the deploying key). Default: saltFor("paymasters/1"). */
  salt?: `0x${string}`;
}

/** ERC-7562's MIN_UNSTAKE_DELAY: bundlers treat a paymaster with a shorter delay as unstaked. */
export const MIN_UNSTAKE_DELAY_SEC = 86_400;

/** The PaymasterDeployer's fixed CREATE2 salt. */
export const PAYMASTER_DEPLOYER_SALT = id("@paymaster/contracts:PaymasterDeployer") as `0x${string}`;

/** Default CREATE2 salt of the paymasters. */
export const DEFAULT_PAYMASTER_SALT = id("@paymaster/contracts:paymasters/1") as `0x${string}`;

/** One contract the plan creates through PaymasterDeployer. */
export interface ContractTarget {
  label: string;
  /** Its CREATE2 address for this deploying key and salt. */
  address: Address;
  /** Fixed constructor arguments, ABI-encoded (for explorer verification). */
  constructorArgs: `0x${string}`;
  initCode: `0x${string}`;
  /** Solidity source name and contract name of the artifact. */
  contract: string;
  state: "missing" | "deployed";
}

/** One paymaster the plan is about. */
export interface PaymasterTarget extends ContractTarget {
  version: EntryPointVersion;
  kind: PaymasterKind;
  entryPoint: Address;
}

/** GasTankDeposit's label in plans and manifests (its contract name). */
export const GAS_TANK_DEPOSIT_LABEL = "GasTankDeposit";

/** A transaction the plan sends (or, in a dry run, would send). */
export interface PlannedTx {
  step: "install-create2-proxy" | "deploy-paymaster-deployer" | "deploy-paymaster" | "deploy-gas-tank-deposit" | "accept-ownership" | "top-up-deposit" | "top-up-stake";
  label: string;
  from: Address;
  to: Address;
  data: `0x${string}`;
  value: bigint;
  /** eth_estimateGas now, or a measured figure (approximate) when an earlier step must land first. */
  gas: bigint;
  gasIsEstimate: boolean;
}

export interface DeployPlan {
  network: string;
  chainId: number;
  deployer: Address;
  config: Required<Omit<NetworkDeployConfig, "salt" | "postOpGas" | "minPostOpGasLimit">> & {
    salt: `0x${string}`;
    /** null: the contract's default. */
    postOpGas: bigint | null;
    minPostOpGasLimit: bigint | null;
  };
  create2Proxy: "present" | "missing";
  paymasterDeployer: { address: Address; state: "missing" | "deployed" };
  paymasters: PaymasterTarget[];
  /** The contract gas-tank deposits are paid into (User Sponsor mode), deployed with the paymasters. */
  gasTankDeposit: ContractTarget;
  txs: PlannedTx[];
  /** What the plan cannot do with the deploying key (e.g. stake top-ups when someone else owns a paymaster). */
  notes: string[];
  /** The fee per gas used for costs: the node's maxFeePerGas suggestion (or gas price). */
  feePerGas: bigint;
  /** Sum of gas x feePerGas + values sent, in wei: what the deploying key needs. */
  totalCostWei: bigint;
}

/**
 * Gas of steps that cannot be estimated before an earlier step lands (the contract they call is not there
 * yet): measured by test/networkDeploy.test.ts on the local chain, rounded up.
 */
export const APPROX_GAS: Record<"deploy-paymaster-deployer" | "deploy-paymaster-verifying" | "deploy-paymaster-erc20" | "deploy-gas-tank-deposit" | "accept-ownership", bigint> = {
  "deploy-paymaster-deployer": 820_000n, // measured 730k
  "deploy-gas-tank-deposit": 880_000n, // measured 800k
  "deploy-paymaster-verifying": 1_900_000n, // + per set-up call; measured 1.67-1.87M with 3 calls
  "deploy-paymaster-erc20": 3_500_000n, // + per set-up call; measured 3.31-3.51M with 5 calls
  "accept-ownership": 40_000n, // measured 28k
};
/** Gas a set-up call (a signer, a token, deposit, stake) adds to a paymaster's deployment, approximately. */
export const APPROX_GAS_PER_SETUP_CALL = 30_000n;

const ENTRY_POINTS: Partial<Record<EntryPointVersion, Address>> = {
  "v0.6": ENTRY_POINT_V06_ADDRESS,
  "v0.7": ENTRY_POINT_V07_ADDRESS,
  "v0.8": ENTRY_POINT_V08_ADDRESS,
};

const FACTORIES = {
  "v0.6": { verifying: VerifyingPaymasterV06__factory, erc20: ERC20PaymasterV06__factory },
  "v0.7": { verifying: VerifyingPaymasterV07__factory, erc20: ERC20PaymasterV07__factory },
  "v0.8": { verifying: VerifyingPaymasterV08__factory, erc20: ERC20PaymasterV08__factory },
} as const;

const STAKE_MANAGER = new Interface([
  "function balanceOf(address account) view returns (uint256)",
  "function getDepositInfo(address account) view returns (uint256 deposit, bool staked, uint112 stake, uint32 unstakeDelaySec, uint48 withdrawTime)",
  "function depositTo(address account) payable",
]);
const OWNABLE2STEP = new Interface([
  "function owner() view returns (address)",
  "function pendingOwner() view returns (address)",
  "function acceptOwnership()",
]);
const PAYMASTER = new Interface([
  "function addSigner(address signer)",
  "function setTreasury(address treasury)",
  "function setTokenSupport(address token, bool supported)",
  "function setPostOpGas(uint256 postOpGas)",
  "function setMinPostOpGasLimit(uint256 minPostOpGasLimit)",
  "function deposit() payable",
  "function addStake(uint32 unstakeDelaySec) payable",
]);

/** A paymaster's contract name, which is also its label in plans, manifests and the operator commands. */
export function paymasterLabel(kind: PaymasterKind, version: EntryPointVersion): string {
  return `${kind === "verifying" ? "VerifyingPaymaster" : "ERC20Paymaster"}V0${version.slice(-1)}`;
}

/** PaymasterDeployer's address (the same on every chain). */
export function paymasterDeployerAddress(): Address {
  const initCode = PaymasterDeployer__factory.bytecode as `0x${string}`;
  return create2Address(CREATE2_DEPLOYER_ADDRESS, PAYMASTER_DEPLOYER_SALT, keccak256(initCode));
}

function create2Address(factory: string, salt: string, initCodeHash: string): Address {
  const digest = keccak256(concat(["0xff", factory, salt, initCodeHash]));
  return getAddress(`0x${digest.slice(26)}`) as Address;
}

/** The address PaymasterDeployer gives `initCode` deployed by `deployer` with `salt`. */
export function paymasterAddress(deployer: Address, salt: string, initCode: string): Address {
  const mixed = keccak256(AbiCoder.defaultAbiCoder().encode(["address", "bytes32"], [deployer, salt]));
  return create2Address(paymasterDeployerAddress(), mixed, keccak256(initCode));
}

/** The fixed constructor arguments of a paymaster, by the constructor's parameter names. */
function constructorArguments(kind: PaymasterKind, version: EntryPointVersion): { values: unknown[]; encoded: `0x${string}` } {
  const factory = FACTORIES[version][kind];
  const constructor = new Interface(factory.abi).deploy;
  const holder = paymasterDeployerAddress();
  const byName: Record<string, unknown> = {
    entryPoint_: ENTRY_POINTS[version],
    owner_: holder,
    signers_: [],
    treasury_: holder,
    postOpGas_: DEFAULT_POST_OP_GAS[version],
    minPostOpGasLimit_: DEFAULT_MIN_POST_OP_GAS_LIMIT,
  };
  const values = constructor.inputs.map((input) => {
    if (!(input.name in byName)) throw new Error(`${factory.name}: no fixed value for constructor parameter ${input.name}`);
    return byName[input.name];
  });
  return { values, encoded: AbiCoder.defaultAbiCoder().encode(constructor.inputs, values) as `0x${string}` };
}

function targetsFor(config: DeployPlan["config"], deployer: Address): Omit<PaymasterTarget, "state">[] {
  const targets: Omit<PaymasterTarget, "state">[] = [];
  for (const version of config.versions) {
    const entryPoint = ENTRY_POINTS[version];
    if (entryPoint === undefined) throw new Error(`no paymasters for EntryPoint ${version} yet`);
    for (const kind of ["verifying", "erc20"] as const) {
      const factory = FACTORIES[version][kind];
      const { encoded } = constructorArguments(kind, version);
      const initCode = concat([factory.bytecode, encoded]) as `0x${string}`;
      const name = paymasterLabel(kind, version);
      targets.push({
        label: name,
        version,
        kind,
        entryPoint,
        address: paymasterAddress(deployer, config.salt, initCode),
        constructorArgs: encoded,
        initCode,
        contract: `contracts/v0${version.slice(-1)}/${name}.sol:${name}`,
      });
    }
  }
  return targets;
}

/** GasTankDeposit created by PaymasterDeployer: its one constructor argument (the owner) fixed to PaymasterDeployer. */
function gasTankDepositTarget(config: DeployPlan["config"], deployer: Address): Omit<ContractTarget, "state"> {
  const constructor = new Interface(GasTankDeposit__factory.abi).deploy;
  const encoded = AbiCoder.defaultAbiCoder().encode(constructor.inputs, [paymasterDeployerAddress()]) as `0x${string}`;
  const initCode = concat([GasTankDeposit__factory.bytecode, encoded]) as `0x${string}`;
  return {
    label: GAS_TANK_DEPOSIT_LABEL,
    address: paymasterAddress(deployer, config.salt, initCode),
    constructorArgs: encoded,
    initCode,
    contract: `contracts/tank/${GAS_TANK_DEPOSIT_LABEL}.sol:${GAS_TANK_DEPOSIT_LABEL}`,
  };
}

/** The set-up PaymasterDeployer runs on a new paymaster (as its first owner) before offering ownership. */
function setupCalls(target: Omit<PaymasterTarget, "state">, config: DeployPlan["config"]): { data: string; value: bigint }[] {
  const calls: { data: string; value: bigint }[] = config.signers.map((signer) => ({ data: PAYMASTER.encodeFunctionData("addSigner", [signer]), value: 0n }));
  if (target.kind === "erc20") {
    calls.push({ data: PAYMASTER.encodeFunctionData("setTreasury", [config.treasury]), value: 0n });
    for (const token of config.tokens) calls.push({ data: PAYMASTER.encodeFunctionData("setTokenSupport", [token, true]), value: 0n });
    if (config.postOpGas !== null && config.postOpGas !== DEFAULT_POST_OP_GAS[target.version]) {
      calls.push({ data: PAYMASTER.encodeFunctionData("setPostOpGas", [config.postOpGas]), value: 0n });
    }
    if (config.minPostOpGasLimit !== null && config.minPostOpGasLimit !== DEFAULT_MIN_POST_OP_GAS_LIMIT) {
      calls.push({ data: PAYMASTER.encodeFunctionData("setMinPostOpGasLimit", [config.minPostOpGasLimit]), value: 0n });
    }
  }
  if (config.depositTarget > 0n) calls.push({ data: PAYMASTER.encodeFunctionData("deposit"), value: config.depositTarget });
  if (config.stakeAmount > 0n) calls.push({ data: PAYMASTER.encodeFunctionData("addStake", [config.unstakeDelaySec]), value: config.stakeAmount });
  return calls;
}

function checkConfig(config: NetworkDeployConfig): DeployPlan["config"] {
  const address = (value: string, what: string): Address => {
    try {
      return getAddress(value) as Address;
    } catch {
      throw new Error(`${what}: ${JSON.stringify(value)} is not an address`);
    }
  };
  if (config.versions.length === 0) throw new Error("versions: name at least one EntryPoint version");
  if (config.signers.length === 0) throw new Error("signers: at least one signer is needed, or the paymasters sponsor nothing");
  const signers = config.signers.map((s, i) => address(s, `signers[${i}]`));
  if (new Set(signers).size !== signers.length) throw new Error("signers: lists the same address twice");
  const unstakeDelaySec = config.unstakeDelaySec ?? DEFAULT_UNSTAKE_DELAY_SEC;
  if (!Number.isInteger(unstakeDelaySec) || unstakeDelaySec < MIN_UNSTAKE_DELAY_SEC || unstakeDelaySec > 2 ** 32 - 1) {
    throw new Error(`unstakeDelaySec: ${unstakeDelaySec} is below one day (${MIN_UNSTAKE_DELAY_SEC} s), which bundlers require of a staked paymaster`);
  }
  if (config.stakeAmount <= 0n) throw new Error("stakeAmount: every paymaster reads its own storage in validation and must be staked (> 0)");
  if (config.depositTarget < 0n) throw new Error("depositTarget: must be >= 0");
  const postOpGas = config.postOpGas ?? null;
  if (postOpGas !== null && postOpGas <= 0n) throw new Error("postOpGas: must be > 0");
  const minPostOpGasLimit = config.minPostOpGasLimit ?? null;
  if (minPostOpGasLimit !== null && minPostOpGasLimit <= 0n) throw new Error("minPostOpGasLimit: must be > 0");
  return {
    network: config.network,
    versions: [...config.versions],
    owner: address(config.owner, "owner"),
    signers,
    treasury: address(config.treasury, "treasury"),
    tokens: config.tokens.map((t, i) => address(t, `tokens[${i}]`)),
    postOpGas,
    minPostOpGasLimit,
    depositTarget: config.depositTarget,
    stakeAmount: config.stakeAmount,
    unstakeDelaySec,
    salt: config.salt ?? DEFAULT_PAYMASTER_SALT,
  };
}

/** Code a contract created from `initCode` has (eth_call of the creation: no `to`). */
async function expectedRuntime(provider: Provider, initCode: string): Promise<string> {
  return (await provider.call({ data: initCode })).toLowerCase();
}

async function estimate(provider: Provider, tx: Omit<PlannedTx, "step" | "label" | "gas" | "gasIsEstimate">, fallback: bigint): Promise<{ gas: bigint; gasIsEstimate: boolean }> {
  try {
    return { gas: await provider.estimateGas({ from: tx.from, to: tx.to, data: tx.data, value: tx.value }), gasIsEstimate: true };
  } catch {
    return { gas: fallback, gasIsEstimate: false };
  }
}

/** Reads the chain and lists every transaction the deployment still needs. Sends nothing. */
export async function planNetworkDeploy(provider: Provider, deployer: Address, input: NetworkDeployConfig): Promise<DeployPlan> {
  const config = checkConfig(input);
  deployer = getAddress(deployer) as Address;
  const chainId = Number((await provider.getNetwork()).chainId);
  const txs: PlannedTx[] = [];
  const notes: string[] = [];

  // First of all: on a chain older than Cancun the contracts would deploy and then fail (docs/deploy.md).
  await assertCancun(provider, chainId);

  for (const version of config.versions) {
    const entryPoint = ENTRY_POINTS[version];
    if (entryPoint === undefined || (await provider.getCode(entryPoint)) === "0x") {
      throw new Error(`EntryPoint ${version} is not deployed at ${entryPoint ?? "(unknown)"} on chain ${chainId}: deploy it first (its canonical deployment)`);
    }
  }

  const create2Proxy = await create2ProxyState(provider);
  if (create2Proxy === "missing") {
    await assertCreate2ProxyInstallable(provider); // the dry run refuses what the install would fail on, before anything is sent
    txs.push({ step: "install-create2-proxy", label: "CREATE2 proxy (presigned transaction)", from: deployer, to: CREATE2_DEPLOYER_ADDRESS, data: "0x", value: CREATE2_PROXY_FUNDING, gas: 121_000n, gasIsEstimate: false });
  }

  const deployerContract = paymasterDeployerAddress();
  const deployerCode = (await provider.getCode(deployerContract)).toLowerCase();
  const deployerState = deployerCode === "0x" ? "missing" : "deployed";
  if (deployerState === "deployed" && deployerCode !== (await expectedRuntime(provider, PaymasterDeployer__factory.bytecode))) {
    throw new Error(`other code is at PaymasterDeployer's address ${deployerContract} on chain ${chainId}: refusing to deploy`);
  }
  if (deployerState === "missing") {
    const tx = { from: deployer, to: CREATE2_DEPLOYER_ADDRESS, data: concat([PAYMASTER_DEPLOYER_SALT, PaymasterDeployer__factory.bytecode]) as `0x${string}`, value: 0n };
    txs.push({ step: "deploy-paymaster-deployer", label: "PaymasterDeployer", ...tx, ...(await estimate(provider, tx, APPROX_GAS["deploy-paymaster-deployer"])) });
  }

  /**
   * Plans one contract PaymasterDeployer creates: missing -> its creation (with `setup`) and the acceptance of
   * its ownership; there -> its code checked, and a hand-over still pending finished. Returns its state and,
   * when it is there, its owner and pending owner.
   */
  const planOwned = async (
    target: Omit<ContractTarget, "state">,
    creation: { step: "deploy-paymaster" | "deploy-gas-tank-deposit"; setup: { data: string; value: bigint }[]; approxGas: bigint },
  ): Promise<{ state: ContractTarget["state"]; owner?: Address; pendingOwner?: Address }> => {
    const code = (await provider.getCode(target.address)).toLowerCase();
    if (code === "0x") {
      const value = creation.setup.reduce((sum, call) => sum + call.value, 0n);
      const data = PaymasterDeployer__factory.createInterface().encodeFunctionData("deploy", [config.salt, target.initCode, creation.setup, config.owner]) as `0x${string}`;
      const tx = { from: deployer, to: deployerContract, data, value };
      txs.push({ step: creation.step, label: target.label, ...tx, ...(deployerState === "deployed" ? await estimate(provider, tx, creation.approxGas) : { gas: creation.approxGas, gasIsEstimate: false }) });
      if (config.owner === deployer) {
        txs.push({ step: "accept-ownership", label: `${target.label}.acceptOwnership`, from: deployer, to: target.address, data: OWNABLE2STEP.encodeFunctionData("acceptOwnership") as `0x${string}`, value: 0n, gas: APPROX_GAS["accept-ownership"], gasIsEstimate: false });
      } else {
        notes.push(`${target.label}: the owner ${config.owner} must call acceptOwnership() on ${target.address} (Ownable2Step)`);
      }
      return { state: "missing" };
    }
    if (code !== (await expectedRuntime(provider, target.initCode))) {
      throw new Error(`${target.label}: other code is at its address ${target.address} on chain ${chainId}: refusing to deploy over it`);
    }
    const contract = new Contract(target.address, OWNABLE2STEP, provider);
    const [owner, pendingOwner] = ((await Promise.all([contract.getFunction("owner")(), contract.getFunction("pendingOwner")()])) as [string, string]).map((a) => getAddress(a) as Address) as [Address, Address];
    if (pendingOwner === deployer) {
      const tx = { from: deployer, to: target.address, data: OWNABLE2STEP.encodeFunctionData("acceptOwnership") as `0x${string}`, value: 0n };
      txs.push({ step: "accept-ownership", label: `${target.label}.acceptOwnership`, ...tx, ...(await estimate(provider, tx, APPROX_GAS["accept-ownership"])) });
    } else if (pendingOwner === config.owner && config.owner !== deployer) {
      notes.push(`${target.label}: the owner ${config.owner} has not yet called acceptOwnership() on ${target.address}`);
    }
    return { state: "deployed", owner, pendingOwner };
  };

  const paymasters: PaymasterTarget[] = [];
  const entryPointReader = (address: Address) => new Contract(address, STAKE_MANAGER, provider);
  for (const target of targetsFor(config, deployer)) {
    const setup = setupCalls(target, config);
    const approxGas = APPROX_GAS[target.kind === "erc20" ? "deploy-paymaster-erc20" : "deploy-paymaster-verifying"] + APPROX_GAS_PER_SETUP_CALL * BigInt(setup.length);
    const { state, owner, pendingOwner } = await planOwned(target, { step: "deploy-paymaster", setup, approxGas });
    paymasters.push({ ...target, state });
    if (state === "missing") continue;

    const ep = entryPointReader(target.entryPoint);
    const [deposit, info] = (await Promise.all([ep.getFunction("balanceOf")(target.address), ep.getFunction("getDepositInfo")(target.address)])) as [
      bigint,
      { stake: bigint; unstakeDelaySec: bigint; withdrawTime: bigint },
    ];
    if (deposit < config.depositTarget) {
      const tx = { from: deployer, to: target.entryPoint, data: STAKE_MANAGER.encodeFunctionData("depositTo", [target.address]) as `0x${string}`, value: config.depositTarget - deposit };
      txs.push({ step: "top-up-deposit", label: `${target.label} deposit ${deposit} -> ${config.depositTarget} wei`, ...tx, ...(await estimate(provider, tx, 60_000n)) });
    }
    const stakeShort = info.stake < config.stakeAmount || Number(info.unstakeDelaySec) < config.unstakeDelaySec || info.withdrawTime !== 0n;
    if (stakeShort) {
      const ownsIt = owner === deployer || pendingOwner === deployer;
      if (!ownsIt) {
        notes.push(`${target.label}: its stake (${info.stake} wei, ${info.unstakeDelaySec} s) is below the target: the owner ${owner} must call addStake(${config.unstakeDelaySec}) with ${config.stakeAmount - (info.stake < config.stakeAmount ? info.stake : config.stakeAmount)} wei`);
      } else {
        const value = info.stake < config.stakeAmount ? config.stakeAmount - info.stake : 0n;
        const delay = Math.max(Number(info.unstakeDelaySec), config.unstakeDelaySec);
        const tx = { from: deployer, to: target.address, data: PAYMASTER.encodeFunctionData("addStake", [delay]) as `0x${string}`, value };
        txs.push({ step: "top-up-stake", label: `${target.label} stake -> ${info.stake + value} wei, ${delay} s`, ...tx, ...(await estimate(provider, tx, 60_000n)) });
      }
    }
  }

  const tankTarget = gasTankDepositTarget(config, deployer);
  const { state: tankState } = await planOwned(tankTarget, { step: "deploy-gas-tank-deposit", setup: [], approxGas: APPROX_GAS["deploy-gas-tank-deposit"] });
  const gasTankDeposit: ContractTarget = { ...tankTarget, state: tankState };

  const fees = await provider.getFeeData();
  const feePerGas = fees.maxFeePerGas ?? fees.gasPrice ?? 0n;
  const totalCostWei = txs.reduce((sum, tx) => sum + tx.gas * feePerGas + tx.value, 0n);
  return {
    network: config.network,
    chainId,
    deployer,
    config,
    create2Proxy,
    paymasterDeployer: { address: deployerContract, state: deployerState },
    paymasters,
    gasTankDeposit,
    txs,
    notes,
    feePerGas,
    totalCostWei,
  };
}

/** A transaction the deployment sent. */
export interface SentTx {
  step: PlannedTx["step"];
  label: string;
  hash: `0x${string}`;
  blockNumber: number;
  gasUsed: bigint;
}

/**
 * Sends the plan's transactions in order, each after the previous one is mined. Refuses to start when the
 * deploying key cannot pay for the whole plan, so nothing is left half done for lack of funds.
 */
export async function executeNetworkDeploy(signer: Signer, plan: DeployPlan, log: (line: string) => void = () => {}): Promise<SentTx[]> {
  const provider = signer.provider;
  if (provider === null) throw new Error("executeNetworkDeploy: the signer has no provider");
  const from = getAddress(await signer.getAddress());
  if (from !== plan.deployer) throw new Error(`executeNetworkDeploy: the plan is for ${plan.deployer}, the signer is ${from}`);
  const balance = await provider.getBalance(from);
  if (balance < plan.totalCostWei) {
    throw new Error(`the deploying key ${from} holds ${balance} wei; the deployment needs about ${plan.totalCostWei} wei (gas at ${plan.feePerGas} wei + deposits and stakes)`);
  }
  const sent: SentTx[] = [];
  for (const planned of plan.txs) {
    if (planned.step === "install-create2-proxy") {
      await installCreate2Proxy(signer, log);
      continue;
    }
    // Gas is estimated again now that every earlier step has landed, with 20% headroom.
    const gasLimit = ((await provider.estimateGas({ from, to: planned.to, data: planned.data, value: planned.value })) * 120n) / 100n;
    const tx = await signer.sendTransaction({ to: planned.to, data: planned.data, value: planned.value, gasLimit });
    const receipt = await tx.wait();
    if (receipt === null || receipt.status !== 1) throw new Error(`${planned.label}: transaction ${tx.hash} failed`);
    sent.push({ step: planned.step, label: planned.label, hash: tx.hash as `0x${string}`, blockNumber: receipt.blockNumber, gasUsed: receipt.gasUsed });
    log(`${planned.label}: ${tx.hash} (block ${receipt.blockNumber}, gas ${receipt.gasUsed})`);
  }
  return sent;
}
