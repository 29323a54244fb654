// The whole service end to end over real HTTP on 127.0.0.1 against the embedded local chain: for each mode
// and EntryPoint version, a wallet asks for sponsorship of a fresh SimpleAccount's first op (deployed by the
// op), signs it, submits handleOps, and we check the op succeeded and who paid. ERC-20 mode also runs for an
// EIP-7702 sender's first op (v0.8; Sponsor mode for it is in eip7702.test.ts).
import { expect } from "chai";
import { decodeEventLog, encodeFunctionData, type Abi } from "viem";
import { ERC20PaymasterV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { decodeErc20PaymasterData, decodePaymasterAndData, eip7702DelegationCode, tokenCost, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import {
  call,
  chainRequest,
  ethCall,
  handleOps,
  mint,
  new7702Wallet,
  newWallet,
  opFromResponse,
  signAsOwner,
  startTestStack,
  timeTravel,
  wireOp,
  type Embedded,
  type Wallet,
  fundTank,
} from "./helpers/stack.ts";

const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7", "v0.8"];
const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;
const tokenAbi = TestTokenArtifact.abi as Abi;

describe("service end to end (embedded local chain, real HTTP)", function () {
  let embedded: Embedded;
  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  const deposit = (paymaster: Address) => ethCall(embedded, paymaster, erc20PaymasterAbi, "getDeposit") as Promise<bigint>;

  for (const version of VERSIONS) {
    const extraFor = (extra: Record<string, string>) => (version === "v0.6" ? extra : { ...extra, version });

    it(`Sponsor mode ${version}: the strategy's paymaster deposit pays for a fresh account's first op`, async () => {
      const wallet = await newWallet(embedded, version);
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor({ strategy_code: embedded.strategyCode })]);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.code).to.equal(200);
      expect(body.message).to.equal("");
      expect(body.data.strategyId).to.equal(embedded.strategyCode);
      expect(body.data.entrypointVersion).to.equal(version);
      expect(body.data.Erc20TokenCost).to.equal(null);
      const paymaster = embedded.stack.manifest.entryPoints[version].verifyingPaymaster;
      expect(body.data.paymasterAddress).to.equal(paymaster);
      if (version === "v0.6") {
        expect(body.data.userOpResponse.accountGasLimit).to.equal("");
        expect(body.data.userOpResponse.paymasterVerificationGasLimit).to.equal(null);
      } else {
        expect(body.data.userOpResponse.accountGasLimit).to.match(/^0x[0-9a-f]{64}$/);
        expect(body.data.userOpResponse.paymasterPostOpGasLimit).to.be.a("number");
      }

      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
      const before = await deposit(paymaster);
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(true);
      expect(outcome.event!.paymaster).to.equal(paymaster);
      expect(before - (await deposit(paymaster))).to.equal(outcome.event!.actualGasCost);
      const record = await embedded.running.service.store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      expect(record?.mode).to.equal("sponsor");
      expect(record?.status).to.equal("signed");
      expect(outcome.event!.actualGasCost <= record!.maxCostWei).to.equal(true);
    });

    it(`User Sponsor mode ${version}: the sender's gas tank covers the maximum cost, reserved against the tank`, async () => {
      const wallet = await newWallet(embedded, version);
      const store = embedded.running.service.store;
      await fundTank(store, wallet.sender, 10n ** 17n, embedded.projectId);
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor({})]);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.data.strategyId).to.equal("");
      const tank = await store.getGasTank("local", wallet.sender);
      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(true);
      expect(outcome.event!.paymaster).to.equal(embedded.stack.manifest.entryPoints[version].verifyingPaymaster);
      const record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      expect(record?.mode).to.equal("user");
      expect(tank.reservedWei).to.equal(record!.maxCostWei);
      expect(outcome.event!.actualGasCost <= tank.reservedWei).to.equal(true);
    });

    it(`${version}: tampering with any returned gas field makes the EntryPoint refuse the op (AA34)`, async () => {
      const wallet = await newWallet(embedded, version);
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor({ strategy_code: embedded.strategyCode })]);
      const base = opFromResponse(wallet, wire, body.data);
      const fields = ["callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas"] as const;
      for (const field of fields) {
        const tampered = { ...base, userOp: { ...base.userOp, [field]: (base.userOp as any)[field] + 1n } } as typeof base;
        const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, tampered));
        expect(outcome.reverted, field).to.equal(true);
        expect(outcome.failedOp, field).to.match(/AA34/);
      }
    });

    it(`${version}: the signature expires 5 minutes after issue (AA32)`, async () => {
      const wallet = await newWallet(embedded, version);
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor({ strategy_code: embedded.strategyCode })]);
      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
      await timeTravel(embedded, 301);
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted).to.equal(true);
      expect(outcome.failedOp).to.match(/AA32/);
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the service see the new block time
    });
  }

  // ERC-20 mode for each version's SimpleAccount, and for an EOA delegated by EIP-7702 (v0.8) whose first op
  // carries its authorization (handleOps in a type-4 transaction).
  const ERC20_WALLETS: { label: string; newWallet: () => Promise<Wallet> }[] = [
    ...VERSIONS.map((version) => ({ label: version, newWallet: () => newWallet(embedded, version) })),
    { label: "v0.8 (EIP-7702 sender)", newWallet: () => new7702Wallet(embedded) },
  ];
  for (const { label, newWallet } of ERC20_WALLETS) {
    it(`ERC-20 mode ${label}: the op's own call approves the paymaster, which keeps the exact rounded-up amount as its fee`, async () => {
      const wallet = await newWallet();
      const { version } = wallet;
      await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
      const paymaster = embedded.stack.manifest.entryPoints[version].erc20Paymaster;
      const wire = wireOp(wallet, approveCallData(usdc.address, paymaster));
      const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, version === "v0.6" ? { token: "USDC" } : { token: "USDC", version }]);
      expect(status, JSON.stringify(body)).to.equal(200);
      const cost = body.data.Erc20TokenCost;
      expect(cost.token).to.equal("USDC");
      expect(cost.address).to.equal(usdc.address);
      expect(cost.decimals).to.equal(6);
      expect(BigInt(cost.exchangeRate)).to.equal(3_150n * 10n ** 6n); // 3000 USD/ETH, 1 USD/USDC, 5% markup
      expect(body.data.paymasterAddress).to.equal(paymaster);
      // The signature caps the charge at the quoted maximum (audit 2, N-7).
      const pnd = body.data.userOpResponse.paymasterAndData as Hex;
      const signed = decodeErc20PaymasterData(version === "v0.6" ? decodePaymasterAndData("v0.6", pnd).paymasterData : decodePaymasterAndData(version, pnd).paymasterData);
      expect(signed.maxTokenCharge).to.equal(BigInt(cost.maxTokenCost));

      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
      // The fee stays in the paymaster (accruedFees) until swept to the treasury.
      const feesBefore = (await ethCall(embedded, paymaster, erc20PaymasterAbi, "accruedFees", [usdc.address])) as bigint;
      const before = await deposit(paymaster);
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(true);
      expect(before - (await deposit(paymaster))).to.equal(outcome.event!.actualGasCost);
      if (wallet.authorization) expect(await chainRequest(embedded, "eth_getCode", [wallet.sender, "latest"])).to.equal(eip7702DelegationCode(wallet.authorization.address));
      const charged = outcome.logs
        .filter((log) => log.address.toLowerCase() === paymaster.toLowerCase())
        .map((log) => {
          try {
            return decodeEventLog({ abi: erc20PaymasterAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
          } catch {
            return undefined;
          }
        })
        .find((e) => e?.eventName === "TokenCharged")?.args as { gasCostWei: bigint; tokenAmount: bigint; exchangeRate: bigint } | undefined;
      expect(charged, "TokenCharged").to.not.equal(undefined);
      expect(charged!.exchangeRate).to.equal(BigInt(cost.exchangeRate));
      const expected = tokenCost(charged!.gasCostWei, BigInt(cost.exchangeRate));
      expect(charged!.tokenAmount).to.equal(expected);
      const feesAfter = (await ethCall(embedded, paymaster, erc20PaymasterAbi, "accruedFees", [usdc.address])) as bigint;
      expect(feesAfter - feesBefore).to.equal(expected);
      expect(expected <= BigInt(cost.maxTokenCost)).to.equal(true);
    });

  }

  it("pm_estimateUserOperationGas answers the same gas values, the maximum cost and stub data of final length, and reserves nothing", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const estimate = await call(embedded.endpoint, "pm_estimateUserOperationGas", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    expect(estimate.status, JSON.stringify(estimate.body)).to.equal(200);
    expect(BigInt(estimate.body.data.maxCostWei) > 0n).to.equal(true);
    const sponsored = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    const e = estimate.body.data.userOpResponse;
    const s = sponsored.body.data.userOpResponse;
    expect(e.paymasterAndData.length).to.equal(s.paymasterAndData.length);
    expect(e.callGasLimit).to.equal(s.callGasLimit);
    expect(e.verificationGasLimit).to.equal(s.verificationGasLimit);
    expect(e.preVerificationGas).to.equal(s.preVerificationGas);
  });
});
