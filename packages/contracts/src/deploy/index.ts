/**
 * Idempotent deployment of the whole local stack: EntryPoint v0.6, v0.7 and v0.8 at their canonical
 * addresses, a SimpleAccountFactory per version, v0.8's Simple7702Account (the EIP-7702 delegate), two
 * TestTokens and the six paymasters, funded, staked and allowlisted. Every contract goes through the CREATE2 deployer proxy with a fixed salt, so running it
 * again against the same chain finds every contract at its predicted address and sends no deployment.
 *
 * Works with any ethers v6 Signer that has a provider: a Hardhat `ethers.getSigners()` signer in mocha
 * tests, or a JsonRpcSigner / Wallet in a standalone script.
 */
import { Contract, ContractFactory, concat, getAddress, getCreate2Address, id, keccak256 } from "ethers";
import type { BytesLike, ContractTransactionResponse, Provider, Signer } from "ethers";
import type { Address, DeploymentManifest, EntryPointVersion, TokenDeployment } from "../manifest.ts";
import { TestToken__factory } from "../../types/ethers-contracts/factories/test/TestToken__factory.ts";
import { GasTankDeposit__factory } from "../../types/ethers-contracts/factories/tank/GasTankDeposit__factory.ts";
import { ERC20PaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/ERC20PaymasterV06__factory.ts";
import { VerifyingPaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/VerifyingPaymasterV06__factory.ts";
import { ERC20PaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/ERC20PaymasterV07__factory.ts";
import { VerifyingPaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/VerifyingPaymasterV07__factory.ts";
import { ERC20PaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/ERC20PaymasterV08__factory.ts";
import { VerifyingPaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/VerifyingPaymasterV08__factory.ts";
import { loadShippedArtifact } from "./aaArtifacts.ts";
import { assertCancun } from "./cancunProbe.ts";
import { EntryPointSimulatorV07Deployment, EntryPointSimulatorV08Deployment, SponsorProbeDeployment } from "../../types/artifacts/index.ts";
import {
  CREATE2_DEPLOYER_ADDRESS,
  CREATE2_DEPLOYER_RUNTIME_CODE,
  DEFAULT_DEPOSIT_TARGET,
  DEFAULT_MIN_POST_OP_GAS_LIMIT,
  DEFAULT_POST_OP_GAS,
  DEFAULT_STAKE_AMOUNT,
  DEFAULT_UNSTAKE_DELAY_SEC,
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V06_SALT,
  ENTRY_POINT_V07_ADDRESS,
  ENTRY_POINT_V07_SALT,
  ENTRY_POINT_V08_ADDRESS,
  ENTRY_POINT_V08_SALT,
  LOCAL_CHAIN_IDS,
  LOCAL_TEST_TOKENS,
} from "./constants.ts";

export * from "./constants.ts";
export * from "./cancunProbe.ts";
export * from "./create2Proxy.ts";
export * from "./network.ts";
export * from "./networkOutputs.ts";
export * from "./deployToNetwork.ts";
export { ENTRY_POINT_VERSIONS, ManifestError, parseManifest, readManifest, writeManifest } from "../manifest.ts";
export type { Address, DeploymentManifest, EntryPointDeployment, EntryPointVersion, TokenDeployment } from "../manifest.ts";

export interface DeployLocalStackOptions {
  /** Accepted sponsorship signers of all four paymasters (non-empty, no duplicates). */
  signers: readonly string[];
  /** Receives the ERC-20 paymasters' token payments. */
  treasury: string;
  /** Paymaster owner. Default: the deployer. */
  owner?: string;
  /**
   * Signs the owner-only set-up (stake, token allowlist, signers, treasury, postOpGas) when `owner` is not
   * the deployer. Without it, a run that needs an owner action against such an owner throws.
   */
  ownerSigner?: Signer;
  /** Gas postOp uses, passed to both ERC-20 paymasters' constructors. Default DEFAULT_POST_OP_GAS of each version (measured, see constants.ts). */
  postOpGas?: bigint | number;
  /**
   * The lowest postOp gas limit the ERC-20 paymasters accept (v0.7 paymasterPostOpGasLimit, v0.6
   * verificationGasLimit). Default DEFAULT_MIN_POST_OP_GAS_LIMIT (measured for the test tokens, see constants.ts).
   */
  minPostOpGasLimit?: bigint | number;
  /** EntryPoint deposit each paymaster is topped up to, in wei. Default 100 ETH. */
  depositTarget?: bigint;
  /** Stake of each paymaster (all four are staked: ERC-7562 STO-031), in wei. Default 1 ETH. */
  stakeAmount?: bigint;
  /** Unstake delay of each paymaster's stake. Default 86400 s (what bundlers require at least). */
  unstakeDelaySec?: number;
  /** Deploy on a chain whose id is not 31337 or 1337. Default false. */
  allowNonLocalChain?: boolean;
  /** `network` label written into the manifest. Default "local". */
  network?: string;
  /** Progress lines (one per contract and per set-up action). Default: silent. */
  log?: (line: string) => void;
}

/** The fixed CREATE2 salt of one of this project's contracts. */
export function saltFor(label: string): `0x${string}` {
  return id(`@paymaster/contracts:${label}`) as `0x${string}`;
}

/** Address the CREATE2 deployer proxy gives `initCode` with `salt`. */
export function predictCreate2Address(salt: BytesLike, initCode: BytesLike): Address {
  return getCreate2Address(CREATE2_DEPLOYER_ADDRESS, salt, keccak256(initCode)) as Address;
}

interface Ctx {
  deployer: Signer;
  provider: Provider;
  log: (line: string) => void;
}

/** Minimal ABI shared by EntryPoint v0.6 and v0.7 for the deposit/stake reads. */
const STAKE_MANAGER_ABI = [
  "function balanceOf(address account) view returns (uint256)",
  "function getDepositInfo(address account) view returns (uint256 deposit, bool staked, uint112 stake, uint32 unstakeDelaySec, uint48 withdrawTime)",
] as const;

function rpcSend(provider: Provider): ((method: string, params: unknown[]) => Promise<unknown>) | undefined {
  const send = (provider as { send?: unknown }).send;
  return typeof send === "function" ? (send.bind(provider) as (m: string, p: unknown[]) => Promise<unknown>) : undefined;
}

/**
 * eth_getCode that bypasses ethers' short-lived request cache (AbstractProvider caches identical requests
 * for `cacheTimeout`, 250 ms by default), so a read right after a write sees the write.
 */
async function freshCode(ctx: Ctx, address: string): Promise<string> {
  const send = rpcSend(ctx.provider);
  if (send === undefined) return ctx.provider.getCode(address);
  return String(await send("eth_getCode", [address, "latest"]));
}

/** Installs the CREATE2 deployer proxy's runtime code (hardhat_setCode, else anvil_setCode) when missing. */
async function ensureCreate2Deployer(ctx: Ctx, chainId: number): Promise<void> {
  const code = await freshCode(ctx, CREATE2_DEPLOYER_ADDRESS);
  if (code !== "0x") {
    if (code.toLowerCase() !== CREATE2_DEPLOYER_RUNTIME_CODE) {
      throw new Error(`unexpected code at the CREATE2 deployer proxy ${CREATE2_DEPLOYER_ADDRESS} on chain ${chainId}`);
    }
    return;
  }
  const send = rpcSend(ctx.provider);
  if (send === undefined) throw new Error("the deployer's provider has no send(): cannot install the CREATE2 deployer proxy");
  let installed = false;
  for (const method of ["hardhat_setCode", "anvil_setCode"]) {
    try {
      await send(method, [CREATE2_DEPLOYER_ADDRESS, CREATE2_DEPLOYER_RUNTIME_CODE]);
      installed = true;
      break;
    } catch {
      // try the next dialect
    }
  }
  if (!installed || (await freshCode(ctx, CREATE2_DEPLOYER_ADDRESS)) === "0x") {
    throw new Error(
      `the CREATE2 deployer proxy ${CREATE2_DEPLOYER_ADDRESS} is missing on chain ${chainId} and the node refuses ` +
        "hardhat_setCode/anvil_setCode: deploy it with its presigned transaction first",
    );
  }
  ctx.log(`installed the CREATE2 deployer proxy at ${CREATE2_DEPLOYER_ADDRESS}`);
}

/** Deploys `initCode` through the proxy with `salt` unless code is already at the predicted address. */
async function deployDeterministic(
  ctx: Ctx,
  label: string,
  salt: BytesLike,
  initCode: BytesLike,
  expected?: Address,
): Promise<Address> {
  const address = predictCreate2Address(salt, initCode);
  if (expected !== undefined && address !== getAddress(expected)) {
    throw new Error(`${label}: the init code predicts ${address}, not the canonical ${expected}`);
  }
  if ((await freshCode(ctx, address)) !== "0x") {
    ctx.log(`${label}: found at ${address}`);
    return address;
  }
  const tx = await ctx.deployer.sendTransaction({ to: CREATE2_DEPLOYER_ADDRESS, data: concat([salt, initCode]) });
  const receipt = await tx.wait();
  if (receipt === null || receipt.status !== 1) throw new Error(`${label}: deployment transaction ${tx.hash} failed`);
  if ((await freshCode(ctx, address)) === "0x") {
    throw new Error(`${label}: no code at ${address} after deployment transaction ${tx.hash}`);
  }
  ctx.log(`${label}: deployed at ${address} (gas ${receipt.gasUsed})`);
  return address;
}

async function mined(label: string, pending: Promise<ContractTransactionResponse>): Promise<void> {
  const tx = await pending;
  const receipt = await tx.wait();
  if (receipt === null || receipt.status !== 1) throw new Error(`${label}: transaction ${tx.hash} failed`);
}

/**
 * Deploys (or finds) the local stack and brings its funding, stake and allowlists up to the targets.
 * Returns the manifest; write it with `writeManifest`.
 */
export async function deployLocalStack(deployer: Signer, options: DeployLocalStackOptions): Promise<DeploymentManifest> {
  const provider = deployer.provider;
  if (provider === null) throw new Error("deployLocalStack: the deployer signer has no provider");
  const chainId = Number((await provider.getNetwork()).chainId);
  if (!LOCAL_CHAIN_IDS.includes(chainId) && options.allowNonLocalChain !== true) {
    throw new Error(
      `deployLocalStack: refusing chain id ${chainId} (only ${LOCAL_CHAIN_IDS.join(", ")} without allowNonLocalChain: true)`,
    );
  }
  const ctx: Ctx = { deployer, provider, log: options.log ?? (() => {}) };

  const deployerAddress = getAddress(await deployer.getAddress()) as Address;
  const owner = getAddress(options.owner ?? deployerAddress) as Address;
  let ownerSigner: Signer | undefined = options.ownerSigner;
  if (ownerSigner !== undefined) {
    const ownerSignerAddress = getAddress(await ownerSigner.getAddress());
    if (ownerSignerAddress !== owner) throw new Error(`deployLocalStack: ownerSigner is ${ownerSignerAddress}, not the owner ${owner}`);
    if (ownerSigner.provider === null) ownerSigner = ownerSigner.connect(provider);
  } else if (owner === deployerAddress) {
    ownerSigner = deployer;
  }
  const asOwner = (action: string): Signer => {
    if (ownerSigner === undefined) {
      throw new Error(`deployLocalStack: ${action} needs the owner ${owner}; pass options.ownerSigner`);
    }
    return ownerSigner;
  };

  if (options.signers.length === 0) throw new Error("deployLocalStack: options.signers is empty");
  const signers = options.signers.map((s) => getAddress(s) as Address);
  if (new Set(signers).size !== signers.length) throw new Error("deployLocalStack: options.signers has duplicates");
  const treasury = getAddress(options.treasury) as Address;
  const postOpGasOf = (version: EntryPointVersion) => BigInt(options.postOpGas ?? DEFAULT_POST_OP_GAS[version]);
  const minPostOpGasLimit = BigInt(options.minPostOpGasLimit ?? DEFAULT_MIN_POST_OP_GAS_LIMIT);
  const depositTarget = options.depositTarget ?? DEFAULT_DEPOSIT_TARGET;
  const stakeAmount = options.stakeAmount ?? DEFAULT_STAKE_AMOUNT;
  const unstakeDelaySec = options.unstakeDelaySec ?? DEFAULT_UNSTAKE_DELAY_SEC;
  if (postOpGasOf("v0.6") < 0n || postOpGasOf("v0.7") < 0n || postOpGasOf("v0.8") < 0n || minPostOpGasLimit < 0n || depositTarget < 0n || stakeAmount <= 0n || !(unstakeDelaySec > 0)) {
    throw new Error("deployLocalStack: postOpGas, minPostOpGasLimit and depositTarget must be >= 0, stakeAmount and unstakeDelaySec > 0");
  }

  await assertCancun(provider, chainId);
  await ensureCreate2Deployer(ctx, chainId);

  // ---- EntryPoints and account factories (shipped artifacts)
  const entryPoint06 = await deployDeterministic(
    ctx,
    "EntryPoint v0.6",
    ENTRY_POINT_V06_SALT,
    loadShippedArtifact("v06", "EntryPoint").bytecode,
    ENTRY_POINT_V06_ADDRESS,
  );
  const entryPoint07 = await deployDeterministic(
    ctx,
    "EntryPoint v0.7",
    ENTRY_POINT_V07_SALT,
    loadShippedArtifact("v07", "EntryPoint").bytecode,
    ENTRY_POINT_V07_ADDRESS,
  );
  const entryPoint08 = await deployDeterministic(
    ctx,
    "EntryPoint v0.8",
    ENTRY_POINT_V08_SALT,
    loadShippedArtifact("v08", "EntryPoint").bytecode,
    ENTRY_POINT_V08_ADDRESS,
  );
  const factoryInitCode = async (version: "v06" | "v07" | "v08", entryPoint: Address): Promise<string> => {
    const artifact = loadShippedArtifact(version, "SimpleAccountFactory");
    const tx = await new ContractFactory(artifact.abi as never, artifact.bytecode).getDeployTransaction(entryPoint);
    return tx.data;
  };
  const accountFactory06 = await deployDeterministic(
    ctx,
    "SimpleAccountFactory v0.6",
    saltFor("SimpleAccountFactory"),
    await factoryInitCode("v06", entryPoint06),
  );
  const accountFactory07 = await deployDeterministic(
    ctx,
    "SimpleAccountFactory v0.7",
    saltFor("SimpleAccountFactory"),
    await factoryInitCode("v07", entryPoint07),
  );
  const accountFactory08 = await deployDeterministic(
    ctx,
    "SimpleAccountFactory v0.8",
    saltFor("SimpleAccountFactory"),
    await factoryInitCode("v08", entryPoint08),
  );
  // The 7702 delegate: its code names the canonical v0.8 EntryPoint itself (no constructor arguments).
  const simple7702Account = await deployDeterministic(
    ctx,
    "Simple7702Account v0.8",
    saltFor("Simple7702Account"),
    loadShippedArtifact("v08", "Simple7702Account").bytecode,
  );

  // ---- test tokens
  const tokens: TokenDeployment[] = [];
  for (const token of LOCAL_TEST_TOKENS) {
    const { data } = await new TestToken__factory().getDeployTransaction(token.name, token.symbol, token.decimals);
    const address = await deployDeterministic(ctx, `TestToken ${token.symbol}`, saltFor("TestToken"), data);
    tokens.push({ symbol: token.symbol, name: token.name, address, decimals: token.decimals });
  }

  // ---- paymasters (constructor arguments are part of the init code, hence of the address)
  const verifying06 = await deployDeterministic(
    ctx,
    "VerifyingPaymasterV06",
    saltFor("VerifyingPaymasterV06"),
    (await new VerifyingPaymasterV06__factory().getDeployTransaction(entryPoint06, owner, signers)).data,
  );
  const erc20_06 = await deployDeterministic(
    ctx,
    "ERC20PaymasterV06",
    saltFor("ERC20PaymasterV06"),
    (await new ERC20PaymasterV06__factory().getDeployTransaction(entryPoint06, owner, signers, treasury, postOpGasOf("v0.6"), minPostOpGasLimit)).data,
  );
  const verifying07 = await deployDeterministic(
    ctx,
    "VerifyingPaymasterV07",
    saltFor("VerifyingPaymasterV07"),
    (await new VerifyingPaymasterV07__factory().getDeployTransaction(entryPoint07, owner, signers)).data,
  );
  const erc20_07 = await deployDeterministic(
    ctx,
    "ERC20PaymasterV07",
    saltFor("ERC20PaymasterV07"),
    (await new ERC20PaymasterV07__factory().getDeployTransaction(entryPoint07, owner, signers, treasury, postOpGasOf("v0.7"), minPostOpGasLimit)).data,
  );
  const verifying08 = await deployDeterministic(
    ctx,
    "VerifyingPaymasterV08",
    saltFor("VerifyingPaymasterV08"),
    (await new VerifyingPaymasterV08__factory().getDeployTransaction(entryPoint08, owner, signers)).data,
  );
  const erc20_08 = await deployDeterministic(
    ctx,
    "ERC20PaymasterV08",
    saltFor("ERC20PaymasterV08"),
    (await new ERC20PaymasterV08__factory().getDeployTransaction(entryPoint08, owner, signers, treasury, postOpGasOf("v0.8"), minPostOpGasLimit)).data,
  );

  // The gas-tank deposit contract (User Sponsor mode), owned by the paymasters' owner.
  const gasTankDeposit = await deployDeterministic(
    ctx,
    "GasTankDeposit",
    saltFor("GasTankDeposit"),
    (await new GasTankDeposit__factory().getDeployTransaction(owner)).data,
  );

  // The v0.7/v0.8 simulators and the service's sponsorship probe, which it references from a small state override
  // instead of sending their code.
  for (const [label, deployment] of [
    ["EntryPointSimulatorV07", EntryPointSimulatorV07Deployment],
    ["EntryPointSimulatorV08", EntryPointSimulatorV08Deployment],
    ["SponsorProbe", SponsorProbeDeployment],
  ] as const) {
    await deployDeterministic(ctx, label, deployment.salt, deployment.initCode, deployment.address);
  }

  // ---- set-up: top up / set only what is missing
  const paymasters = [
    { label: "VerifyingPaymasterV06", address: verifying06, entryPoint: entryPoint06, erc20: false, postOpGas: postOpGasOf("v0.6") },
    { label: "ERC20PaymasterV06", address: erc20_06, entryPoint: entryPoint06, erc20: true, postOpGas: postOpGasOf("v0.6") },
    { label: "VerifyingPaymasterV07", address: verifying07, entryPoint: entryPoint07, erc20: false, postOpGas: postOpGasOf("v0.7") },
    { label: "ERC20PaymasterV07", address: erc20_07, entryPoint: entryPoint07, erc20: true, postOpGas: postOpGasOf("v0.7") },
    { label: "VerifyingPaymasterV08", address: verifying08, entryPoint: entryPoint08, erc20: false, postOpGas: postOpGasOf("v0.8") },
    { label: "ERC20PaymasterV08", address: erc20_08, entryPoint: entryPoint08, erc20: true, postOpGas: postOpGasOf("v0.8") },
  ];
  for (const pm of paymasters) {
    // Every paymaster shares PaymasterBase; the v0.6 ERC-20 binding covers the base and token functions.
    const asDeployer = ERC20PaymasterV06__factory.connect(pm.address, deployer);
    const entryPoint = new Contract(pm.entryPoint, STAKE_MANAGER_ABI, provider);

    for (const signer of signers) {
      if (!(await asDeployer.isSigner(signer))) {
        await mined(`${pm.label}.addSigner`, asDeployer.connect(asOwner("addSigner")).addSigner(signer));
        ctx.log(`${pm.label}: added signer ${signer}`);
      }
    }

    const deposit = (await entryPoint.getFunction("balanceOf")(pm.address)) as bigint;
    if (deposit < depositTarget) {
      await mined(`${pm.label}.deposit`, asDeployer.deposit({ value: depositTarget - deposit }));
      ctx.log(`${pm.label}: deposit topped up from ${deposit} to ${depositTarget} wei`);
    }

    // Every paymaster is staked: the verifying ones read their own storage (the signer set) in validation,
    // which ERC-7562 allows a staked entity only (STO-031); the ERC-20 ones also return a context.
    const info = (await entryPoint.getFunction("getDepositInfo")(pm.address)) as {
      staked: boolean;
      stake: bigint;
      unstakeDelaySec: bigint;
      withdrawTime: bigint;
    };
    const currentDelay = Number(info.unstakeDelaySec);
    if (!info.staked || info.stake < stakeAmount || currentDelay < unstakeDelaySec || info.withdrawTime !== 0n) {
      const value = info.stake < stakeAmount ? stakeAmount - info.stake : 0n;
      const delay = Math.max(currentDelay, unstakeDelaySec);
      await mined(`${pm.label}.addStake`, asDeployer.connect(asOwner("addStake")).addStake(delay, { value }));
      ctx.log(`${pm.label}: staked ${info.stake + value} wei, unstake delay ${delay} s`);
    }

    if (!pm.erc20) continue;

    for (const token of tokens) {
      if (!(await asDeployer.isSupportedToken(token.address))) {
        await mined(`${pm.label}.setTokenSupport`, asDeployer.connect(asOwner("setTokenSupport")).setTokenSupport(token.address, true));
        ctx.log(`${pm.label}: allowlisted ${token.symbol} ${token.address}`);
      }
    }
    if (getAddress(await asDeployer.treasury()) !== treasury) {
      await mined(`${pm.label}.setTreasury`, asDeployer.connect(asOwner("setTreasury")).setTreasury(treasury));
      ctx.log(`${pm.label}: treasury set to ${treasury}`);
    }
    if ((await asDeployer.postOpGas()) !== pm.postOpGas) {
      await mined(`${pm.label}.setPostOpGas`, asDeployer.connect(asOwner("setPostOpGas")).setPostOpGas(pm.postOpGas));
      ctx.log(`${pm.label}: postOpGas set to ${pm.postOpGas}`);
    }
    if ((await asDeployer.minPostOpGasLimit()) !== minPostOpGasLimit) {
      await mined(
        `${pm.label}.setMinPostOpGasLimit`,
        asDeployer.connect(asOwner("setMinPostOpGasLimit")).setMinPostOpGasLimit(minPostOpGasLimit),
      );
      ctx.log(`${pm.label}: minPostOpGasLimit set to ${minPostOpGasLimit}`);
    }
  }

  const entryPoints: Record<EntryPointVersion, DeploymentManifest["entryPoints"][EntryPointVersion]> = {
    "v0.6": {
      entryPoint: entryPoint06,
      simpleAccountFactory: accountFactory06,
      verifyingPaymaster: verifying06,
      erc20Paymaster: erc20_06,
    },
    "v0.7": {
      entryPoint: entryPoint07,
      simpleAccountFactory: accountFactory07,
      verifyingPaymaster: verifying07,
      erc20Paymaster: erc20_07,
    },
    "v0.8": {
      entryPoint: entryPoint08,
      simpleAccountFactory: accountFactory08,
      verifyingPaymaster: verifying08,
      erc20Paymaster: erc20_08,
      simple7702Account,
    },
  };
  return {
    schema: 1,
    network: options.network ?? "local",
    chainId,
    deployedAt: new Date().toISOString(),
    owner,
    signers,
    treasury,
    entryPoints,
    tokens,
    gasTankDeposit,
  };
}
