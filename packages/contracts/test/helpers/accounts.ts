// Accounts prepared outside the paymaster flow (deployed, funded with tokens, paymasters approved).
import { expect } from "chai";
import { Contract, MaxUint256, Wallet, parseEther } from "ethers";
import { eip7702DelegationCode, type EntryPointVersion } from "@paymaster/shared";
import { ethers, networkHelpers, type Stack } from "./stack.ts";
import { accountCallData, newAccount, randomOwner } from "./userOps.ts";

export interface ReadyAccount {
  owner: Wallet;
  address: string;
}

/** The account runs `calls` directly from its owner (SimpleAccount lets the owner call execute). */
export async function ownerExecute(
  version: EntryPointVersion,
  account: ReadyAccount,
  calls: { to: string; value?: bigint; data: string }[],
) {
  const tx = await account.owner.sendTransaction({ to: account.address, data: accountCallData(version, calls) });
  await tx.wait();
}

/**
 * Deploys `owner`'s SimpleAccount with `salt`. v0.8's factory takes createAccount only from the EntryPoint's
 * SenderCreator, so there the call is sent as that (impersonated) contract.
 */
export async function deployAccount(stack: Stack, version: EntryPointVersion, owner: string, salt: bigint): Promise<void> {
  const factory = stack.v[version].factory;
  if (version !== "v0.8") {
    await (await factory.getFunction("createAccount")(owner, salt)).wait();
    return;
  }
  const senderCreator: string = await stack.v[version].entryPoint.getFunction("senderCreator")();
  await networkHelpers.impersonateAccount(senderCreator);
  await networkHelpers.setBalance(senderCreator, 10n ** 18n);
  const asCreator = factory.connect(await ethers.getSigner(senderCreator)) as Contract;
  await (await asCreator.getFunction("createAccount")(owner, salt)).wait();
  await networkHelpers.stopImpersonatingAccount(senderCreator);
}

/** A deployed SimpleAccount holding 1000 USDC and 1000 DAI, with an owner that has ETH for direct calls. */
export async function readyAccount(
  stack: Stack,
  version: EntryPointVersion,
  { approveErc20Paymaster = true, salt = 0n }: { approveErc20Paymaster?: boolean; salt?: bigint } = {},
): Promise<ReadyAccount> {
  const owner = randomOwner();
  await networkHelpers.setBalance(owner.address, 10n ** 19n);
  const { address } = await newAccount(stack, version, owner.address, salt);
  await deployAccount(stack, version, owner.address, salt);
  await (await stack.tokens.USDC.mint(address, 1_000n * 10n ** 6n)).wait();
  await (await stack.tokens.DAI.mint(address, 1_000n * 10n ** 18n)).wait();
  const account = { owner, address };
  if (approveErc20Paymaster) {
    const paymaster = await stack.v[version].erc20.getAddress();
    await ownerExecute(version, account, [
      { to: await stack.tokens.USDC.getAddress(), data: approveData(stack, paymaster, MaxUint256) },
      { to: await stack.tokens.DAI.getAddress(), data: approveData(stack, paymaster, MaxUint256) },
    ]);
  }
  return account;
}

/**
 * A deployed SimpleAccount holding exactly `amount` of `token` (any mintable test token), approving the version's
 * ERC-20 paymaster for `allowance`.
 */
export async function accountWithToken(
  stack: Stack,
  version: EntryPointVersion,
  token: Contract,
  amount: bigint,
  allowance: bigint = MaxUint256,
): Promise<ReadyAccount> {
  const owner = randomOwner();
  await networkHelpers.setBalance(owner.address, 10n ** 19n);
  const { address } = await newAccount(stack, version, owner.address);
  await deployAccount(stack, version, owner.address, 0n);
  await (await token.getFunction("mint")(address, amount)).wait();
  const account = { owner, address };
  await ownerExecute(version, account, [{ to: await token.getAddress(), data: approveData(stack, await stack.v[version].erc20.getAddress(), allowance) }]);
  return account;
}

/** Makes `account` (a SimpleAccount) the owner of the version's ERC-20 paymaster, with an EntryPoint deposit of its own. */
export async function accountOwnsPaymaster(stack: Stack, version: EntryPointVersion, account: ReadyAccount) {
  const paymaster = stack.v[version].erc20;
  await (await paymaster.getFunction("transferOwnership")(account.address)).wait();
  await ownerExecute(version, account, [{ to: await paymaster.getAddress(), data: paymaster.interface.encodeFunctionData("acceptOwnership") }]);
  expect(await paymaster.getFunction("owner")()).to.equal(account.address);
  await (await stack.v[version].entryPoint.getFunction("depositTo")(account.address, { value: parseEther("1") })).wait();
}

/** calldata of token.approve(spender, amount). */
export function approveData(stack: Stack, spender: string, amount: bigint): string {
  return stack.tokens.USDC.interface.encodeFunctionData("approve", [spender, amount]);
}

/** calldata of token.transfer(to, amount). */
export function transferData(stack: Stack, to: string, amount: bigint): string {
  return stack.tokens.USDC.interface.encodeFunctionData("transfer", [to, amount]);
}

export type { Contract };

/** A fresh EOA with ETH, delegated to `delegate` by a signed EIP-7702 authorization in a type-4 transaction. */
export async function delegatedWallet(stack: Stack, delegate: string): Promise<Wallet> {
  const eoa = new Wallet(Wallet.createRandom().privateKey, ethers.provider);
  await networkHelpers.setBalance(eoa.address, 10n ** 18n);
  await delegateTo(stack, eoa, delegate);
  return eoa;
}

/** `eoa` signs an authorization to `delegate`, carried by someone else's type-4 transaction (a re-delegation too). */
export async function delegateTo(stack: Stack, eoa: Wallet, delegate: string): Promise<void> {
  const authorization = await eoa.authorize({ address: delegate, chainId: stack.chainId });
  const [funder] = await ethers.getSigners();
  await (await funder!.sendTransaction({ type: 4, to: eoa.address, authorizationList: [authorization] })).wait();
  expect((await ethers.provider.getCode(eoa.address)).toLowerCase()).to.equal(eip7702DelegationCode(delegate as `0x${string}`));
}
