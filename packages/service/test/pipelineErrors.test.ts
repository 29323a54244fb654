// Every refusal of the sponsor pipeline, end to end over real HTTP against the embedded stack (local chain,
// SQLite file, the service on 127.0.0.1): for each one the HTTP status, the envelope code, data.reason and
// its details, and that the refusal reserved and recorded nothing. pm_estimateUserOperationGas is
// spot-checked to refuse the same way. The paymaster-deposit test drains and then restores the deposit, so
// it runs last.
import { expect } from "chai";
import { decodeErrorResult, decodeEventLog, encodeFunctionData, maxUint256, parseGwei, type Abi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  SimpleAccountFactoryV06Artifact,
  SimpleAccountV06Artifact,
  TestTokenArtifact,
  VerifyingPaymasterV06Artifact,
} from "@paymaster/contracts/artifacts";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import { DEFAULT_GAS_CAPS } from "../src/config/types.ts";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import {
  call,
  chainRequest,
  ethCall,
  handleOps,
  mint,
  newWallet,
  opFromResponse,
  sendTx,
  signAsOwner,
  startTestStack,
  wireOp,
  abis,
  type Embedded,
  type Envelope,
  type Wallet,
  allowTank,
  fundTank,
} from "./helpers/stack.ts";
import { openSponsorshipReader, type SponsorshipReader } from "./helpers/sponsorships.ts";

const SPONSOR = "pm_sponsorUserOperation";
const ESTIMATE = "pm_estimateUserOperationGas";
const factoryAbi = SimpleAccountFactoryV06Artifact.abi as Abi; // same createAccount/getAddress in v0.7
const accountAbi = SimpleAccountV06Artifact.abi as Abi;
const tokenAbi = TestTokenArtifact.abi as Abi;
const verifyingPaymasterAbi = VerifyingPaymasterV06Artifact.abi as Abi;

/** Asserts an error envelope: HTTP status = code = `status`, a message, data.reason = `reason`; returns data. */
function expectRefusal(answer: { status: number; body: Envelope }, status: number, reason: string): Record<string, any> {
  const where = JSON.stringify(answer.body);
  expect(answer.status, where).to.equal(status);
  expect(answer.body.code, where).to.equal(status);
  expect(answer.body.message, where).to.be.a("string").and.not.equal("");
  expect(answer.body.data?.reason, where).to.equal(reason);
  return answer.body.data;
}

function expectOk(answer: { status: number; body: Envelope }): any {
  expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
  expect(answer.body.code).to.equal(200);
  return answer.body.data;
}

describe("sponsor pipeline refusals (embedded local chain, real HTTP)", function () {
  let embedded: Embedded;
  let sponsorships: SponsorshipReader;
  let projectId: string;

  before(async () => {
    embedded = await startTestStack();
    sponsorships = openSponsorshipReader(embedded);
    projectId = (await embedded.running.service.store.findApiKey(embedded.apiKey))!.projectId;
  });
  after(async () => {
    sponsorships?.close();
    await embedded?.close();
  });

  const store = () => embedded.running.service.store;
  const entryPoints = (version: EntryPointVersion) => embedded.stack.manifest.entryPoints[version];
  const token = (symbol: "USDC" | "DAI") => embedded.stack.manifest.tokens.find((t) => t.symbol === symbol)!;
  const sponsor = (wire: unknown, extra: Record<string, unknown>, endpoint = embedded.endpoint) => call(endpoint, SPONSOR, [wire, extra]);
  const estimate = (wire: unknown, extra: Record<string, unknown>) => call(embedded.endpoint, ESTIMATE, [wire, extra]);
  const endpointFor = (apiKey: string) => `${embedded.running.url}/api/v1/paymaster/local?apiKey=${apiKey}`;
  const withVersion = (version: EntryPointVersion, extra: Record<string, unknown>) => (version === "v0.6" ? extra : { ...extra, version });
  /** A fresh wallet's first op (deploys the account, calls the owner with no data). */
  const freshOp = async (version: EntryPointVersion = "v0.6") => {
    const wallet = await newWallet(embedded, version);
    return { wallet, wire: wireOp(wallet, executeCallData(wallet.owner.address)) };
  };
  const expectNothingRecorded = async (sender: Address) => {
    expect(sponsorships.count(sender), "sponsorships recorded for the refused sender").to.equal(0);
    expect((await store().getGasTank("local", sender)).reservedWei).to.equal(0n);
  };
  /** What the service uses as "market" maxFeePerGas at `block`: 2 x base fee + the node's priority fee. */
  const marketFees = async (block: bigint | "latest" = "latest") => {
    const tag = block === "latest" ? block : hex(block);
    const { baseFeePerGas } = await chainRequest<{ baseFeePerGas: Hex }>(embedded, "eth_getBlockByNumber", [tag, false]);
    const priority = BigInt(await chainRequest<Hex>(embedded, "eth_maxPriorityFeePerGas"));
    return { maxFeePerGas: BigInt(baseFeePerGas) * 2n + priority, maxPriorityFeePerGas: priority };
  };
  const submitSigned = async (wallet: Wallet, wire: ReturnType<typeof wireOp>, data: any) => {
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event!.success).to.equal(true);
    return outcome;
  };
  const hex = (value: bigint) => `0x${value.toString(16)}`;
  /**
   * Makes the service's fee snapshot the latest block's (it is polled, so it can lag one block behind the
   * transactions of the previous test): tests comparing two answers' maximum costs need the same fees in both.
   */
  const settleMarket = async () => {
    const market = embedded.running.service.networks.get("local")!.chain!.market;
    market.invalidate();
    await market.current();
  };

  // ---------------------------------------------------------------------------------------------------
  describe("Sponsor mode: the strategy", () => {
    it("an unknown strategy_code is STRATEGY_NOT_FOUND (404), for sponsoring and estimating alike", async () => {
      const { wallet, wire } = await freshOp();
      const data = expectRefusal(await sponsor(wire, { strategy_code: "NO_SUCH_STRATEGY" }), 404, "STRATEGY_NOT_FOUND");
      expect(Object.keys(data)).to.deep.equal(["reason"]);
      expectRefusal(await estimate(wire, { strategy_code: "NO_SUCH_STRATEGY" }), 404, "STRATEGY_NOT_FOUND");
      await expectNothingRecorded(wallet.sender);
    });

    it("another project's strategy is reported as unknown (STRATEGY_NOT_FOUND), and works with that project's key", async () => {
      const other = await store().createProject("Other project");
      await store().createStrategy({ projectId: other.id, code: "OTHER_PROJECT", name: "not yours", networks: ["local"] });
      const { wallet, wire } = await freshOp();
      const answer = await sponsor(wire, { strategy_code: "OTHER_PROJECT" });
      const data = expectRefusal(answer, 404, "STRATEGY_NOT_FOUND");
      expect(Object.keys(data), "nothing about the other project leaks").to.deep.equal(["reason"]);
      expect(answer.body.message).to.not.include(other.id);
      expect(sponsorships.count(wallet.sender)).to.equal(0);

      const { plaintext } = await store().createApiKey(other.id, "other");
      const ok = expectOk(await sponsor(wire, { strategy_code: "OTHER_PROJECT" }, endpointFor(plaintext)));
      expect(ok.strategyId).to.equal("OTHER_PROJECT");
      expect(sponsorships.statuses(wallet.sender)).to.deep.equal(["signed"]);
    });

    it("a disabled strategy is STRATEGY_NOT_ALLOWED (403) with rule status", async () => {
      const strategy = await store().createStrategy({ projectId, code: "DISABLED_ONE", name: "off" });
      await store().setStrategyStatus(strategy.id, "disabled");
      const { wallet, wire } = await freshOp();
      const data = expectRefusal(await sponsor(wire, { strategy_code: "DISABLED_ONE" }), 403, "STRATEGY_NOT_ALLOWED");
      expect(data).to.deep.equal({ reason: "STRATEGY_NOT_ALLOWED", rule: "status", limit: "enabled", value: "disabled" });
      expectRefusal(await estimate(wire, { strategy_code: "DISABLED_ONE" }), 403, "STRATEGY_NOT_ALLOWED");
      await expectNothingRecorded(wallet.sender);
    });

    it("a strategy whose window has not started is refused with rule validFrom, its limit and the current time", async () => {
      const now = Math.floor(Date.now() / 1000);
      const validFrom = now + 3600;
      await store().createStrategy({ projectId, code: "NOT_YET", name: "later", validFrom });
      const { wallet, wire } = await freshOp();
      const data = expectRefusal(await sponsor(wire, { strategy_code: "NOT_YET" }), 403, "STRATEGY_NOT_ALLOWED");
      expect(data.rule).to.equal("validFrom");
      expect(data.limit).to.equal(validFrom);
      expect(data.value).to.be.a("number").within(now - 5, now + 120); // the later of the wall clock and the chain's
      await expectNothingRecorded(wallet.sender);
    });

    it("a strategy whose window has ended is refused with rule validUntil, its limit and the current time", async () => {
      const now = Math.floor(Date.now() / 1000);
      const validUntil = now - 3600;
      await store().createStrategy({ projectId, code: "TOO_LATE", name: "over", validFrom: now - 7200, validUntil });
      const { wallet, wire } = await freshOp();
      const data = expectRefusal(await sponsor(wire, { strategy_code: "TOO_LATE" }), 403, "STRATEGY_NOT_ALLOWED");
      expect(data.rule).to.equal("validUntil");
      expect(data.limit).to.equal(validUntil);
      expect(data.value).to.be.a("number").within(now - 5, now + 120);
      await expectNothingRecorded(wallet.sender);
    });

    it("a strategy restricted to another network is refused with rule networks", async () => {
      await store().createStrategy({ projectId, code: "ELSEWHERE", name: "base only", networks: ["base-sepolia"] });
      const { wallet, wire } = await freshOp("v0.7");
      const data = expectRefusal(await sponsor(wire, { strategy_code: "ELSEWHERE", version: "v0.7" }), 403, "STRATEGY_NOT_ALLOWED");
      expect(data).to.deep.equal({ reason: "STRATEGY_NOT_ALLOWED", rule: "networks", limit: ["base-sepolia"], value: "local" });
      await expectNothingRecorded(wallet.sender);
    });
  });

  // ---------------------------------------------------------------------------------------------------
  describe("ERC-20 mode", () => {
    it("an unknown token is TOKEN_NOT_SUPPORTED (400) listing the supported ones", async () => {
      const { wallet, wire } = await freshOp();
      const data = expectRefusal(await sponsor(wire, { token: "WETH" }), 400, "TOKEN_NOT_SUPPORTED");
      expect([...data.supported].sort()).to.deep.equal(["DAI", "USDC"]);
      const estimated = expectRefusal(await estimate(wire, { token: "WETH" }), 400, "TOKEN_NOT_SUPPORTED");
      expect([...estimated.supported].sort()).to.deep.equal(["DAI", "USDC"]);
      await expectNothingRecorded(wallet.sender);
    });

    it("the token given by address (lowercase) instead of symbol is sponsored and the op succeeds", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const dai = token("DAI");
      await mint(embedded, "DAI", wallet.sender, 1_000n * 10n ** 18n);
      const paymaster = entryPoints("v0.6").erc20Paymaster;
      const wire = wireOp(wallet, approveCallData(dai.address, paymaster));
      const data = expectOk(await sponsor(wire, { token: dai.address.toLowerCase() }));
      expect(data.paymasterAddress).to.equal(paymaster);
      expect(data.Erc20TokenCost.token).to.equal("DAI");
      expect(data.Erc20TokenCost.address).to.equal(dai.address);
      expect(data.Erc20TokenCost.decimals).to.equal(18);
      const before = (await ethCall(embedded, dai.address, tokenAbi, "balanceOf", [wallet.sender])) as bigint;
      await submitSigned(wallet, wire, data);
      const after = (await ethCall(embedded, dai.address, tokenAbi, "balanceOf", [wallet.sender])) as bigint;
      expect(before - after > 0n, "the sender paid in DAI").to.equal(true);
      expect(before - after <= BigInt(data.Erc20TokenCost.maxTokenCost)).to.equal(true);
    });

    for (const version of ["v0.6", "v0.7"] as const) {
      it(`${version}: a sender without tokens is TOKEN_BALANCE_INSUFFICIENT (402) with required and balance`, async () => {
        const wallet = await newWallet(embedded, version);
        const wire = wireOp(wallet, approveCallData(token("USDC").address, entryPoints(version).erc20Paymaster));
        const data = expectRefusal(await sponsor(wire, withVersion(version, { token: "USDC" })), 402, "TOKEN_BALANCE_INSUFFICIENT");
        expect(data.token).to.equal("USDC");
        expect(data.balance).to.equal("0");
        expect(BigInt(data.required) > 0n).to.equal(true);
        // The maximum at 3150 USDC/ETH of a first op is well under 100 USDC.
        expect(BigInt(data.required) < 100n * 10n ** 6n).to.equal(true);
        await expectNothingRecorded(wallet.sender);
      });

      it(`${version}: a sender with tokens but no allowance and no approve in its calls is TOKEN_ALLOWANCE_INSUFFICIENT (402)`, async () => {
        const { wallet, wire } = await freshOp(version);
        await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        const data = expectRefusal(await sponsor(wire, withVersion(version, { token: "USDC" })), 402, "TOKEN_ALLOWANCE_INSUFFICIENT");
        expect(data.token).to.equal("USDC");
        expect(data.paymaster).to.equal(entryPoints(version).erc20Paymaster);
        expect(BigInt(data.required) > 0n).to.equal(true);
        await expectNothingRecorded(wallet.sender);
      });
    }

    for (const version of ["v0.6", "v0.7"] as const) {
      it(`${version}: a deployed account with an existing allowance gets pre-charge mode, and the op succeeds`, async () => {
        // Dev account #5 (unlocked, funded) owns the account: it deploys it and approves the paymaster directly.
        const devOwner = embedded.stack.chain.accounts[5]!;
        const owner = privateKeyToAccount(devOwner.privateKey);
        const salt = version === "v0.6" ? 7n : 8n;
        const factory = entryPoints(version).simpleAccountFactory;
        const sender = (await ethCall(embedded, factory, factoryAbi, "getAddress", [owner.address, salt])) as Address;
        const createAccount = encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, salt] });
        expect((await sendTx(embedded, factory, createAccount)).status).to.equal("0x1");
        const usdc = token("USDC");
        const paymaster = entryPoints(version).erc20Paymaster;
        await mint(embedded, "USDC", sender, 1_000n * 10n ** 6n);
        const approve = encodeFunctionData({ abi: tokenAbi, functionName: "approve", args: [paymaster, maxUint256] });
        const execute = encodeFunctionData({ abi: accountAbi, functionName: "execute", args: [usdc.address, 0n, approve] });
        expect((await sendTx(embedded, sender, execute, owner.address)).status).to.equal("0x1");
        expect(await ethCall(embedded, usdc.address, tokenAbi, "allowance", [sender, paymaster])).to.equal(maxUint256);

        const wallet: Wallet = { owner, version, sender, initCode: "0x" };
        const wire = wireOp(wallet, executeCallData(owner.address), { deploy: false });
        const data = expectOk(await sponsor(wire, withVersion(version, { token: "USDC" })));
        const pmd: string = data.userOpResponse.paymasterAndData;
        // chargeMode byte: after paymaster (20) [+ two gas limits (32) in v0.7] + validUntil (6) + validAfter (6) + token (20) + rate (32).
        const offset = version === "v0.6" ? 84 : 116;
        expect(pmd.length).to.equal(2 + 2 * (version === "v0.6" ? 182 : 214));
        expect(`0x${pmd.slice(2 + 2 * offset - 104, 2 + 2 * offset - 64)}`.toLowerCase()).to.equal(usdc.address.toLowerCase());
        expect(pmd.slice(2 + 2 * offset, 2 + 2 * offset + 2), "chargeMode").to.equal("01");
        // maxTokenCharge (32 bytes) follows: the quoted maximum (audit 2, N-7).
        expect(BigInt(`0x${pmd.slice(2 + 2 * offset + 2, 2 + 2 * offset + 66)}`), "maxTokenCharge").to.equal(BigInt(data.Erc20TokenCost.maxTokenCost));

        // The fee stays in the paymaster (accruedFees) until swept to the treasury.
        const feesBefore = (await ethCall(embedded, paymaster, abis.erc20Paymaster, "accruedFees", [usdc.address])) as bigint;
        const senderBefore = (await ethCall(embedded, usdc.address, tokenAbi, "balanceOf", [sender])) as bigint;
        await submitSigned(wallet, wire, data);
        const charged = ((await ethCall(embedded, paymaster, abis.erc20Paymaster, "accruedFees", [usdc.address])) as bigint) - feesBefore;
        const paid = senderBefore - ((await ethCall(embedded, usdc.address, tokenAbi, "balanceOf", [sender])) as bigint);
        expect(charged > 0n).to.equal(true);
        expect(paid, "the sender got the pre-charge's unused part back").to.equal(charged);
        expect(charged <= BigInt(data.Erc20TokenCost.maxTokenCost)).to.equal(true);
      });
    }
    it("v0.7: a callGasLimit far above the op's estimate is signed as given; the token charge covers v0.7's penalty on the unused gas (audit 3, finding 5)", async () => {
      const wallet = await newWallet(embedded, "v0.7");
      await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
      const wire = wireOp(wallet, approveCallData(token("USDC").address, entryPoints("v0.7").erc20Paymaster));
      const greedy = { ...wire, callGasLimit: hex(5_000_000n) };
      const data = expectOk(await sponsor(greedy, withVersion("v0.7", { token: "USDC" })));
      const signed = data.userOpResponse;
      expect(BigInt(signed.callGasLimit)).to.equal(5_000_000n);
      const outcome = await submitSigned(wallet, greedy, data);
      const { actualGasCost, actualGasUsed } = outcome.event!;
      const charged = outcome.logs
        .map((log) => {
          try {
            return decodeEventLog({ abi: abis.erc20Paymaster, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
          } catch {
            return undefined;
          }
        })
        .find((e) => e?.eventName === "TokenCharged")!.args as unknown as { gasCostWei: bigint; tokenAmount: bigint };
      const price = actualGasCost / actualGasUsed;
      const shortGas = actualGasUsed - charged.gasCostWei / price;
      console.log(`      v0.7, callGasLimit 5M: the deposit paid ${actualGasUsed} gas, the sender was charged ${charged.gasCostWei / price}: short ${shortGas} gas`);
      // The EntryPoint took ~10% of the ~4.9M gas left unused, and the sender paid for it: the paymaster is short at
      // most 10% of what validation used (bounded by its two signed limits), never more than the quote's maximum.
      expect(actualGasUsed > 490_000n).to.equal(true);
      expect(shortGas <= (BigInt(signed.verificationGasLimit) + BigInt(signed.paymasterVerificationGasLimit)) / 10n, `short ${shortGas} gas`).to.equal(true);
      expect(charged.tokenAmount <= BigInt(data.Erc20TokenCost.maxTokenCost)).to.equal(true);
    });
  });

  // ---------------------------------------------------------------------------------------------------
  describe("User Sponsor mode: the gas tank", () => {
    it("a sender without a gas tank is GAS_TANK_INSUFFICIENT (402) with requiredWei and availableWei", async () => {
      const { wallet, wire } = await freshOp();
      await settleMarket();
      await allowTank(store(), wallet.sender, projectId); // allowed, but empty
      const data = expectRefusal(await sponsor(wire, {}), 402, "GAS_TANK_INSUFFICIENT");
      expect(data.availableWei).to.equal("0");
      expect(BigInt(data.requiredWei) > 0n).to.equal(true);
      const estimated = expectOk(await estimate(wire, {}));
      expect(data.requiredWei, "the refusal asks for the estimate's maximum cost").to.equal(estimated.maxCostWei);
      await expectNothingRecorded(wallet.sender);
    });

    it("a tank covering exactly one op: the first is reserved, another nonce refused, the same nonce replaces (not doubles) the reservation", async () => {
      const { wallet, wire } = await freshOp();
      await settleMarket();
      await allowTank(store(), wallet.sender, projectId);
      const maxCost = BigInt(expectOk(await estimate(wire, {})).maxCostWei);
      await store().creditGasTank("local", wallet.sender, maxCost, `test:${wallet.sender}`);

      const first = expectOk(await sponsor(wire, {}));
      let tank = await store().getGasTank("local", wallet.sender);
      expect(tank.balanceWei).to.equal(maxCost);
      expect(tank.reservedWei).to.equal(maxCost);

      // Another op of the same sender (nonce key 1, sequence 0: valid for an undeployed account).
      const other = wireOp(wallet, executeCallData(wallet.owner.address), { nonce: 1n << 64n });
      const refused = expectRefusal(await sponsor(other, {}), 402, "GAS_TANK_INSUFFICIENT");
      expect(refused.availableWei).to.equal("0");
      expect(refused.requiredWei, "that op's own maximum cost").to.equal(expectOk(await estimate(other, {})).maxCostWei);
      expect((await store().getGasTank("local", wallet.sender)).reservedWei).to.equal(maxCost);
      expect(sponsorships.statuses(wallet.sender)).to.deep.equal(["signed"]);

      // The same (sender, nonce) again: the reservation is replaced.
      const again = expectOk(await sponsor(wire, {}));
      tank = await store().getGasTank("local", wallet.sender);
      expect(tank.reservedWei, "replaced, not doubled").to.equal(maxCost);
      expect(sponsorships.statuses(wallet.sender)).to.deep.equal(["released", "signed"]);
      expect(again.userOpResponse.callGasLimit).to.equal(first.userOpResponse.callGasLimit);

      const outcome = await submitSigned(wallet, wire, again);
      const record = await store().findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      expect(record?.mode).to.equal("user");
      expect(record?.status).to.equal("signed");
    });
  });

  // ---------------------------------------------------------------------------------------------------
  describe("the request", () => {
    it('version "v0.9" is UNSUPPORTED_ENTRYPOINT_VERSION (400)', async () => {
      const { wallet, wire } = await freshOp("v0.7");
      const data = expectRefusal(await sponsor(wire, { strategy_code: embedded.strategyCode, version: "v0.9" }), 400, "UNSUPPORTED_ENTRYPOINT_VERSION");
      expect(data.supported).to.deep.equal(["v0.6", "v0.7", "v0.8"]);
      expectRefusal(await estimate(wire, { strategy_code: embedded.strategyCode, version: "v0.9" }), 400, "UNSUPPORTED_ENTRYPOINT_VERSION");
      await expectNothingRecorded(wallet.sender);
    });

    it("fees far above the market are FEE_TOO_HIGH (400) with rule, limit and value", async () => {
      const { wallet, wire } = await freshOp();
      const op = { ...wire, maxFeePerGas: hex(parseGwei("1000")), maxPriorityFeePerGas: hex(parseGwei("1")) };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 400, "FEE_TOO_HIGH");
      expect(Object.keys(data)).to.deep.equal(["reason", "rule", "limit", "value"]);
      expect(data.rule).to.equal("maxFeePerGas");
      expect(data.value).to.equal(parseGwei("1000").toString());
      // The limit is 3 x the market maxFeePerGas of the service's block snapshot (polled: the latest or one just before).
      const latest = BigInt(await chainRequest<Hex>(embedded, "eth_blockNumber"));
      const limits: string[] = [];
      for (let block = latest; block >= 0n && block > latest - 4n; block--) {
        limits.push((((await marketFees(block)).maxFeePerGas * BigInt(DEFAULT_GAS_CAPS.maxFeeMultiplierBps)) / 10_000n).toString());
      }
      expect(limits).to.include(data.limit);
      expectRefusal(await estimate(op, { strategy_code: embedded.strategyCode }), 400, "FEE_TOO_HIGH");
      await expectNothingRecorded(wallet.sender);
    });

    it("a gas limit above the network's cap is GAS_LIMIT_TOO_HIGH (400) with rule, limit and value", async () => {
      const { wallet, wire } = await freshOp();
      const op = { ...wire, callGasLimit: "0x1000000000" };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 400, "GAS_LIMIT_TOO_HIGH");
      expect(data).to.deep.equal({
        reason: "GAS_LIMIT_TOO_HIGH",
        rule: "callGasLimit",
        limit: DEFAULT_GAS_CAPS.maxCallGasLimit.toString(),
        value: 0x1000000000n.toString(),
      });
      await expectNothingRecorded(wallet.sender);
    });

    it("a gas limit above the cap is refused even when every other gas value is given (no estimation)", async () => {
      const { wallet, wire } = await freshOp();
      const market = await marketFees();
      const op = {
        ...wire,
        callGasLimit: hex(DEFAULT_GAS_CAPS.maxCallGasLimit + 1n),
        verificationGasLimit: "0x7a120",
        preVerificationGas: "0xc350",
        maxFeePerGas: hex(market.maxFeePerGas),
        maxPriorityFeePerGas: hex(market.maxPriorityFeePerGas),
      };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 400, "GAS_LIMIT_TOO_HIGH");
      expect(data.rule).to.equal("callGasLimit");
      expect(data.value).to.equal((DEFAULT_GAS_CAPS.maxCallGasLimit + 1n).toString());
      await expectNothingRecorded(wallet.sender);
    });

    it("maxPriorityFeePerGas above maxFeePerGas is INVALID_PARAMS (400)", async () => {
      const { wallet, wire } = await freshOp();
      const op = { ...wire, maxFeePerGas: hex(parseGwei("2")), maxPriorityFeePerGas: hex(parseGwei("3")) };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 400, "INVALID_PARAMS");
      // The same issue shape as the params schema's (path as keys and indices), e.g. for a malformed fee:
      expect(data.issues).to.deep.equal([{ path: [0, "maxPriorityFeePerGas"], message: "must not exceed maxFeePerGas" }]);
      const schemaIssue = expectRefusal(await sponsor({ ...op, maxPriorityFeePerGas: "0xzz" }, { strategy_code: embedded.strategyCode }), 400, "INVALID_PARAMS");
      expect(schemaIssue.issues[0].path).to.deep.equal([0, "maxPriorityFeePerGas"]);
      await expectNothingRecorded(wallet.sender);
    });

    it("client gas values within the caps are kept exactly, and the signed op succeeds with them", async () => {
      const { wallet, wire } = await freshOp("v0.7");
      const market = await marketFees();
      const given = {
        callGasLimit: 60_000n,
        verificationGasLimit: 600_000n,
        preVerificationGas: 55_555n,
        maxFeePerGas: market.maxFeePerGas + 7n,
        maxPriorityFeePerGas: market.maxPriorityFeePerGas + 3n,
      };
      const op = { ...wire, ...Object.fromEntries(Object.entries(given).map(([key, value]) => [key, hex(value)])) };
      const data = expectOk(await sponsor(op, { strategy_code: embedded.strategyCode, version: "v0.7" }));
      const r = data.userOpResponse;
      expect({
        callGasLimit: BigInt(r.callGasLimit),
        verificationGasLimit: BigInt(r.verificationGasLimit),
        preVerificationGas: BigInt(r.preVerificationGas),
        maxFeePerGas: BigInt(r.maxFeePerGas),
        maxPriorityFeePerGas: BigInt(r.maxPriorityFeePerGas),
      }).to.deep.equal(given);
      // v0.7 packs them: verificationGasLimit high 128 bits, callGasLimit low.
      expect(r.accountGasLimit).to.equal(`0x${given.verificationGasLimit.toString(16).padStart(32, "0")}${given.callGasLimit.toString(16).padStart(32, "0")}`);
      await submitSigned(wallet, op as ReturnType<typeof wireOp>, data);
    });

    it("zero gas values are estimated, exactly as when they are left out", async () => {
      const { wallet, wire } = await freshOp();
      const zeros = { ...wire, callGasLimit: "0x0", verificationGasLimit: "0x00", preVerificationGas: "0x0" };
      await settleMarket();
      const data = expectOk(await sponsor(zeros, { strategy_code: embedded.strategyCode }));
      const omitted = expectOk(await estimate(wire, { strategy_code: embedded.strategyCode }));
      for (const field of ["callGasLimit", "verificationGasLimit", "preVerificationGas"] as const) {
        expect(data.userOpResponse[field], field).to.be.a("number").above(0);
        expect(data.userOpResponse[field], field).to.equal(omitted.userOpResponse[field]);
      }
      await submitSigned(wallet, zeros as ReturnType<typeof wireOp>, data);
    });

    it("a revoked API key is API_KEY_REVOKED (401) and nothing is reserved for the op", async () => {
      const { apiKey, plaintext } = await store().createApiKey(projectId, "to revoke");
      await store().revokeApiKey(apiKey.id);
      const { wallet, wire } = await freshOp();
      await fundTank(store(), wallet.sender, 10n ** 17n, projectId);
      expectRefusal(await sponsor(wire, {}, endpointFor(plaintext)), 401, "API_KEY_REVOKED");
      expectRefusal(await sponsor(wire, { strategy_code: embedded.strategyCode }, endpointFor(plaintext)), 401, "API_KEY_REVOKED");
      await expectNothingRecorded(wallet.sender);
      // The same op with the project's active key is sponsorable.
      expectOk(await sponsor(wire, {}));
      expect((await store().getGasTank("local", wallet.sender)).reservedWei > 0n).to.equal(true);
    });
  });

  // ---------------------------------------------------------------------------------------------------
  describe("what the EntryPoint says", () => {
    for (const version of ["v0.6", "v0.7"] as const) {
      it(`${version}: a wrong nonce for an undeployed account is SIMULATION_FAILED (422) with AA25`, async () => {
        const wallet = await newWallet(embedded, version);
        const wire = wireOp(wallet, executeCallData(wallet.owner.address), { nonce: 5n });
        const data = expectRefusal(await sponsor(wire, withVersion(version, { strategy_code: embedded.strategyCode })), 422, "SIMULATION_FAILED");
        expect(data.aaCode).to.equal("AA25");
        expect(data.entryPointReason).to.match(/^AA25 invalid account nonce/);
        await expectNothingRecorded(wallet.sender);
      });

      it(`${version}: a signature the account cannot parse (65 zero bytes) is SIMULATION_FAILED with AA23`, async () => {
        const { wallet, wire } = await freshOp(version);
        const op = { ...wire, signature: `0x${"00".repeat(65)}` };
        const data = expectRefusal(await sponsor(op, withVersion(version, { strategy_code: embedded.strategyCode })), 422, "SIMULATION_FAILED");
        expect(data.aaCode).to.equal("AA23");
        expect(data.entryPointReason).to.match(/^AA23 reverted/);
        await expectNothingRecorded(wallet.sender);
      });
    }

    it("an initCode whose factory deploys another address (the v0.7 factory for a v0.6 sender) is SIMULATION_FAILED with AA14", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const createAccount = encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [wallet.owner.address, 0n] });
      const op = { ...wireOp(wallet, executeCallData(wallet.owner.address)), initCode: `${entryPoints("v0.7").simpleAccountFactory}${createAccount.slice(2)}` };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 422, "SIMULATION_FAILED");
      expect(data.aaCode).to.equal("AA14");
      expect(data.entryPointReason).to.match(/^AA14 initCode must return sender/);
      expectRefusal(await estimate(op, { strategy_code: embedded.strategyCode }), 422, "SIMULATION_FAILED");
      await expectNothingRecorded(wallet.sender);
    });

    it("an initCode with mangled factoryData (the call reverts) is SIMULATION_FAILED with AA13", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const mangled = `${wallet.initCode.slice(0, 42)}deadbeef${wallet.initCode.slice(50)}`; // unknown selector
      const op = { ...wireOp(wallet, executeCallData(wallet.owner.address)), initCode: mangled };
      const data = expectRefusal(await sponsor(op, { strategy_code: embedded.strategyCode }), 422, "SIMULATION_FAILED");
      expect(data.aaCode).to.equal("AA13");
      expect(data.entryPointReason).to.match(/^AA13 initCode failed/);
      await expectNothingRecorded(wallet.sender);
    });

    it("an op whose calls revert is EXECUTION_REVERTED (422) with the revert data", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const usdc = token("USDC");
      const transfer = encodeFunctionData({ abi: tokenAbi, functionName: "transfer", args: [wallet.owner.address, 10n ** 30n] });
      const wire = wireOp(wallet, executeCallData(usdc.address, transfer));
      const data = expectRefusal(await sponsor(wire, { strategy_code: embedded.strategyCode }), 422, "EXECUTION_REVERTED");
      expect(data.revertData).to.match(/^0x[0-9a-f]{8,}$/);
      const decoded = decodeErrorResult({ abi: tokenAbi, data: data.revertData });
      expect(decoded.errorName).to.equal("ERC20InsufficientBalance");
      expect(decoded.args).to.deep.equal([wallet.sender, 0n, 10n ** 30n]);
      await expectNothingRecorded(wallet.sender);
    });
  });

  // ---------------------------------------------------------------------------------------------------
  // Last: drains the verifying paymaster's deposit (and restores it).
  describe("the paymaster's deposit", () => {
    it("a deposit too low for the op is PAYMASTER_DEPOSIT_LOW (503) with AA31; after a top-up the service sponsors again", async () => {
      const paymaster = entryPoints("v0.6").verifyingPaymaster;
      const owner = embedded.stack.owner.address;
      const depositBefore = (await ethCall(embedded, paymaster, verifyingPaymasterAbi, "getDeposit")) as bigint;
      const withdrawn = depositBefore - 1_000n;
      const withdraw = encodeFunctionData({ abi: verifyingPaymasterAbi, functionName: "withdrawTo", args: [owner, withdrawn] });
      expect((await sendTx(embedded, paymaster, withdraw, owner)).status).to.equal("0x1");
      try {
        expect(await ethCall(embedded, paymaster, verifyingPaymasterAbi, "getDeposit")).to.equal(1_000n);
        const { wallet, wire } = await freshOp();
        const data = expectRefusal(await sponsor(wire, { strategy_code: embedded.strategyCode }), 503, "PAYMASTER_DEPOSIT_LOW");
        expect(data.aaCode).to.equal("AA31");
        expect(data.entryPointReason).to.match(/^AA31 paymaster deposit too low/);
        await expectNothingRecorded(wallet.sender);
      } finally {
        const deposit = encodeFunctionData({ abi: verifyingPaymasterAbi, functionName: "deposit" });
        const hash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from: owner, to: paymaster, data: deposit, value: hex(withdrawn) }]);
        await chainRequest(embedded, "eth_getTransactionReceipt", [hash]);
      }
      expect(await ethCall(embedded, paymaster, verifyingPaymasterAbi, "getDeposit")).to.equal(depositBefore);
      const { wallet, wire } = await freshOp();
      const data = expectOk(await sponsor(wire, { strategy_code: embedded.strategyCode }));
      await submitSigned(wallet, wire, data);
    });
  });
});
