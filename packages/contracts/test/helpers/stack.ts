// The deployed local stack every contract test starts from: one fixture, restored from a snapshot per test.
import { network } from "hardhat";
import { Contract, Wallet, type Signer } from "ethers";
import entryPointV06 from "@account-abstraction/contracts-v06/artifacts/EntryPoint.json" with { type: "json" };
import entryPointV07 from "@account-abstraction/contracts-v07/artifacts/EntryPoint.json" with { type: "json" };
import factoryV06 from "@account-abstraction/contracts-v06/artifacts/SimpleAccountFactory.json" with { type: "json" };
import factoryV07 from "@account-abstraction/contracts-v07/artifacts/SimpleAccountFactory.json" with { type: "json" };
import entryPointV08 from "@account-abstraction/contracts-v08/artifacts/EntryPoint.json" with { type: "json" };
import factoryV08 from "@account-abstraction/contracts-v08/artifacts/SimpleAccountFactory.json" with { type: "json" };
import { deployLocalStack, type DeploymentManifest } from "../../src/deploy/index.ts";
import {
  ERC20PaymasterV06__factory,
  ERC20PaymasterV07__factory,
  TestToken__factory,
  VerifyingPaymasterV06__factory,
  VerifyingPaymasterV07__factory,
  ERC20PaymasterV08__factory,
  VerifyingPaymasterV08__factory,
  type TestToken,
} from "../../types/ethers-contracts/index.ts";
import type { EntryPointVersion } from "@paymaster/shared";

export const connection = await network.create();
export const { ethers, networkHelpers } = connection;

/** Fixed test keys: the paymaster's signer and a second signer for rotation tests. */
export const SIGNER_KEY = "0x" + "11".repeat(32);
export const SECOND_SIGNER_KEY = "0x" + "22".repeat(32);
export const STRANGER_KEY = "0x" + "33".repeat(32);

export interface VersionContracts {
  entryPoint: Contract;
  factory: Contract;
  verifying: Contract;
  erc20: Contract;
}

export interface Stack {
  manifest: DeploymentManifest;
  chainId: bigint;
  owner: Signer;
  treasury: string;
  beneficiary: string;
  signer: Wallet;
  secondSigner: Wallet;
  stranger: Wallet;
  tokens: { USDC: TestToken; DAI: TestToken };
  v: Record<EntryPointVersion, VersionContracts>;
}

async function deployFixture(): Promise<Stack> {
  const [owner, treasurySigner, beneficiarySigner] = await ethers.getSigners();
  const signer = new Wallet(SIGNER_KEY, ethers.provider);
  const manifest = await deployLocalStack(owner!, {
    signers: [signer.address],
    treasury: await treasurySigner!.getAddress(),
  });
  const v06 = manifest.entryPoints["v0.6"];
  const v07 = manifest.entryPoints["v0.7"];
  const v08 = manifest.entryPoints["v0.8"];
  const token = (symbol: string) => {
    const entry = manifest.tokens.find((t) => t.symbol === symbol);
    if (!entry) throw new Error(`token ${symbol} missing from the manifest`);
    return TestToken__factory.connect(entry.address, owner);
  };
  return {
    manifest,
    chainId: (await ethers.provider.getNetwork()).chainId,
    owner: owner!,
    treasury: await treasurySigner!.getAddress(),
    beneficiary: await beneficiarySigner!.getAddress(),
    signer,
    secondSigner: new Wallet(SECOND_SIGNER_KEY, ethers.provider),
    stranger: new Wallet(STRANGER_KEY, ethers.provider),
    tokens: { USDC: token("USDC"), DAI: token("DAI") },
    v: {
      "v0.6": {
        entryPoint: new Contract(v06.entryPoint, entryPointV06.abi, owner),
        factory: new Contract(v06.simpleAccountFactory, factoryV06.abi, owner),
        verifying: VerifyingPaymasterV06__factory.connect(v06.verifyingPaymaster, owner) as unknown as Contract,
        erc20: ERC20PaymasterV06__factory.connect(v06.erc20Paymaster, owner) as unknown as Contract,
      },
      "v0.7": {
        entryPoint: new Contract(v07.entryPoint, entryPointV07.abi, owner),
        factory: new Contract(v07.simpleAccountFactory, factoryV07.abi, owner),
        verifying: VerifyingPaymasterV07__factory.connect(v07.verifyingPaymaster, owner) as unknown as Contract,
        erc20: ERC20PaymasterV07__factory.connect(v07.erc20Paymaster, owner) as unknown as Contract,
      },
      "v0.8": {
        entryPoint: new Contract(v08.entryPoint, entryPointV08.abi, owner),
        factory: new Contract(v08.simpleAccountFactory, factoryV08.abi, owner),
        verifying: VerifyingPaymasterV08__factory.connect(v08.verifyingPaymaster, owner) as unknown as Contract,
        erc20: ERC20PaymasterV08__factory.connect(v08.erc20Paymaster, owner) as unknown as Contract,
      },
    },
  };
}

/** The deployed stack, restored from the same snapshot for every call. */
export function loadStack(): Promise<Stack> {
  return networkHelpers.loadFixture(deployFixture);
}

export {
  ERC20PaymasterV06__factory,
  ERC20PaymasterV07__factory,
  ERC20PaymasterV08__factory,
  VerifyingPaymasterV06__factory,
  VerifyingPaymasterV07__factory,
  VerifyingPaymasterV08__factory,
};
