// The ERC-7562 checker catches what it claims to: real traces of a test paymaster whose validation does one
// restricted thing each (contracts/test/ValidationProbePaymaster.sol), judged with and without a stake. Also
// the evidence for THREAT_MODEL.md that an EIP-2612 permit cannot be applied in validation.
import { expect } from "chai";
import { AbiCoder, Contract, Signature, concat, toBeHex, type Wallet } from "ethers";
import { checkValidationTrace, type EntityStakes } from "../src/erc7562/index.ts";
import { PermitToken__factory, ValidationProbePaymaster__factory } from "../types/ethers-contracts/index.ts";
import { ethers, loadStack, type Stack } from "./helpers/stack.ts";
import { accountCallData, draftOp, newAccount, randomOwner, signAsOwner } from "./helpers/userOps.ts";
import { readyAccount } from "./helpers/accounts.ts";
import { traceHandleOps } from "./helpers/trace.ts";

const version = "v0.7" as const;
const coder = AbiCoder.defaultAbiCoder();

async function deployProbe(stack: Stack) {
  const entryPoint = await stack.v[version].entryPoint.getAddress();
  const probe = await new ValidationProbePaymaster__factory(stack.owner).deploy(entryPoint);
  await (await probe.deposit({ value: 10n ** 18n })).wait();
  return probe;
}

/** Traces an op paid by the probe running `probe` with `args`, and checks it with `stakes`. */
async function check(
  stack: Stack,
  probeAddress: string,
  probe: number,
  args: string,
  stakes: EntityStakes,
  { paymasterVerificationGasLimit = 150_000n, firstOp = false }: { paymasterVerificationGasLimit?: bigint; firstOp?: boolean } = {},
) {
  let owner;
  let sender: string;
  let initCode = "0x";
  if (firstOp) {
    owner = randomOwner();
    ({ address: sender, initCode } = await newAccount(stack, version, owner.address));
  } else {
    ({ owner, address: sender } = await readyAccount(stack, version));
  }
  const draft = await draftOp({ sender, initCode, callData: accountCallData(version, [{ to: owner.address, data: "0x" }]), paymasterVerificationGasLimit });
  const op = await signAsOwner(stack, version, { ...draft, paymaster: probeAddress, paymasterData: concat([toBeHex(probe, 1), args]) }, owner);
  const trace = await traceHandleOps(stack, version, op);
  const factory = firstOp ? { factory: await stack.v[version].factory.getAddress() } : {};
  const entities = { entryPoint: await stack.v[version].entryPoint.getAddress(), sender: op.sender, paymaster: probeAddress, ...factory };
  return checkValidationTrace(trace, entities, stakes).violations.filter((v) => v.entity === "paymaster");
}

const rulesOf = (violations: { rule: string }[]) => [...new Set(violations.map((v) => v.rule))].sort();

describe("ERC-7562 checker: catches each restricted validation in a real trace", () => {
  it("control: a validation that does nothing restricted passes, staked or not", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    expect(await check(stack, await probe.getAddress(), 7, "0x", { paymaster: false })).to.deep.equal([]);
  });

  it("OP-011: TIMESTAMP, whatever the stake", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const violations = await check(stack, await probe.getAddress(), 1, "0x", { paymaster: true });
    expect(rulesOf(violations)).to.deep.equal(["OP-011"]);
    expect(violations[0]!.opcode).to.equal("TIMESTAMP");
    expect(violations[0]!.contract).to.equal((await probe.getAddress()).toLowerCase());
  });

  it("STO-033: reading a foreign contract's unassociated storage (a token's totalSupply) needs a stake", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const usdc = await stack.tokens.USDC.getAddress();
    const args = coder.encode(["address"], [usdc]);
    const unstaked = await check(stack, await probe.getAddress(), 2, args, { paymaster: false });
    expect(rulesOf(unstaked)).to.deep.equal(["STO-033"]);
    expect(unstaked[0]!.opcode).to.equal("SLOAD");
    expect(unstaked[0]!.contract).to.equal(usdc.toLowerCase());
    expect(await check(stack, await probe.getAddress(), 2, args, { paymaster: true })).to.deep.equal([]);
  });

  it("STO-031: the paymaster's own storage needs a stake", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    expect(rulesOf(await check(stack, await probe.getAddress(), 3, "0x", { paymaster: false }))).to.deep.equal(["STO-031"]);
    expect(await check(stack, await probe.getAddress(), 3, "0x", { paymaster: true })).to.deep.equal([]);
  });

  it("OP-012: GAS not followed by a call (gasleft())", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const violations = await check(stack, await probe.getAddress(), 4, "0x", { paymaster: true });
    expect(rulesOf(violations)).to.deep.equal(["OP-012"]);
  });

  it("STO-021: the sender's balance in a token is fine once the account exists; for a first op only with a staked factory", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const args = coder.encode(["address"], [await stack.tokens.USDC.getAddress()]);
    expect(await check(stack, await probe.getAddress(), 8, args, { paymaster: false })).to.deep.equal([]);
    const first = await check(stack, await probe.getAddress(), 8, args, { paymaster: false, factory: false }, { firstOp: true });
    expect(rulesOf(first)).to.deep.equal(["STO-021"]);
    expect(await check(stack, await probe.getAddress(), 8, args, { paymaster: false, factory: true }, { firstOp: true })).to.deep.equal([]);
  });

  it("OP-061: a CALL with value (to anything but the EntryPoint)", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    await stack.owner.sendTransaction({ to: await probe.getAddress(), value: 10n });
    expect(rulesOf(await check(stack, await probe.getAddress(), 9, "0x", { paymaster: true }))).to.deep.equal(["OP-061"]);
  });

  it("OP-031: CREATE in validation", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    expect(rulesOf(await check(stack, await probe.getAddress(), 10, "0x", { paymaster: true }))).to.deep.equal(["OP-031"]);
  });

  it("OP-080: SELFBALANCE needs a stake", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    expect(rulesOf(await check(stack, await probe.getAddress(), 5, "0x", { paymaster: false }))).to.deep.equal(["OP-080"]);
    expect(await check(stack, await probe.getAddress(), 5, "0x", { paymaster: true })).to.deep.equal([]);
  });
});

describe("ERC-7562 checker: out of gas", () => {
  it("OP-020: a validation that runs out of gas (paymasterVerificationGasLimit 2500 for a cold SLOAD)", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const violations = await check(stack, await probe.getAddress(), 3, "0x", { paymaster: true }, { paymasterVerificationGasLimit: 2_500n });
    expect(violations.map((v) => `${v.rule} ${v.opcode}`)).to.deep.equal(["OP-020 SLOAD"]);
  });
});

describe("EIP-2612 permit in validation (item 3's first-op path): the evidence", () => {
  /** `signer`'s EIP-712 permit signature for `owner`'s tokens (owner = signer for an EOA). */
  async function permitSignature(token: Contract, signer: Wallet, owner: string, spender: string, value: bigint, deadline: bigint) {
    const { chainId } = await ethers.provider.getNetwork();
    const domain = { name: "Permit USD (test)", version: "1", chainId, verifyingContract: await token.getAddress() };
    const types = {
      Permit: [
        { name: "owner", type: "address" },
        { name: "spender", type: "address" },
        { name: "value", type: "uint256" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
      ],
    };
    const nonce: bigint = await token.getFunction("nonces")(owner);
    return Signature.from(await signer.signTypedData(domain, types, { owner, spender, value, nonce, deadline }));
  }

  it("OpenZeppelin's permit reads TIMESTAMP (OP-011) even when it succeeds: no bundler in safe mode accepts it, staked or not", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const token = (await new PermitToken__factory(stack.owner).deploy()) as unknown as Contract;
    const holder = randomOwner();
    const deadline = 2n ** 40n;
    const sig = await permitSignature(token, holder, holder.address, await probe.getAddress(), 10n ** 6n, deadline);
    const args = coder.encode(
      ["address", "address", "uint256", "uint256", "uint8", "bytes32", "bytes32"],
      [await token.getAddress(), holder.address, 10n ** 6n, deadline, sig.v, sig.r, sig.s],
    );
    const violations = await check(stack, await probe.getAddress(), 6, args, { paymaster: true });
    const timestamp = violations.filter((v) => v.rule === "OP-011");
    expect(timestamp.map((v) => v.opcode)).to.deep.equal(["TIMESTAMP"]);
    expect(timestamp[0]!.contract).to.equal((await token.getAddress()).toLowerCase());
    // The holder is an EOA, not the op's sender (a smart account cannot sign a permit, see below), so the
    // permit's nonce write is not even associated with the sender: STO-033 as well.
    expect(rulesOf(violations)).to.deep.equal(["OP-011", "STO-033"]);
  });

  it("and it cannot serve smart accounts: the account's owner key signing for the account is refused (no ERC-1271)", async () => {
    const stack = await loadStack();
    const token = (await new PermitToken__factory(stack.owner).deploy()) as unknown as Contract;
    const account = await readyAccount(stack, version);
    const spender = await stack.v[version].erc20.getAddress();
    const deadline = 2n ** 40n;
    // What a SimpleAccount's owner would sign: the permit of the account's tokens, by the key that controls it.
    const sig = await permitSignature(token, account.owner, account.address, spender, 10n ** 6n, deadline);
    await expect(token.getFunction("permit")(account.address, spender, 10n ** 6n, deadline, sig.v, sig.r, sig.s))
      .to.be.revertedWithCustomError(token, "ERC2612InvalidSigner")
      .withArgs(account.owner.address, account.address);
  });
});
