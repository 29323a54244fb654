/**
 * Unit tests of the policy rules: evaluateRules (one accepted and one refused case per rule, with the
 * verdict's rule/limit/value; the fixed order; batches with one disallowed call), capChecks (scopes, keys,
 * UTC days across midnight) and the USD conversions' rounding.
 */
import { expect } from "chai";
import { encodeFunctionData, erc20Abi, getAddress, parseAbi, type Address, type Hex } from "viem";
import {
  capChecks,
  evaluateRules,
  formatUsdMicros,
  RULE_ORDER,
  usdToMicros,
  utcDayKey,
  weiToUsdMicros,
  type RuleInput,
} from "../src/policy/rules.ts";
import type { RuleVerdict, StrategyRules } from "../src/policy/types.ts";

const ALICE = getAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
const BOB = getAddress("0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc");
const TOKEN = getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e");
const ROUTER = getAddress("0x2626664c2603336e57b271c5c0b26f421741e481");
const EVIL = getAddress("0x000000000000000000000000000000000000dead");

const ACCOUNT_ABI = parseAbi([
  "function execute(address dest, uint256 value, bytes func)",
  "function executeBatch(address[] dest, uint256[] value, bytes[] func)",
]);
const TRANSFER = "0xa9059cbb";
const APPROVE = "0x095ea7b3";
const transfer = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [BOB, 1n] });
const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [ROUTER, 1n] });
const transferFrom = encodeFunctionData({ abi: erc20Abi, functionName: "transferFrom", args: [ALICE, BOB, 1n] });

const execute = (dest: Address, func: Hex, value = 0n): Hex =>
  encodeFunctionData({ abi: ACCOUNT_ABI, functionName: "execute", args: [dest, value, func] });
const batch = (calls: [Address, Hex][]): Hex =>
  encodeFunctionData({
    abi: ACCOUNT_ABI,
    functionName: "executeBatch",
    args: [calls.map((c) => c[0]), calls.map(() => 0n), calls.map((c) => c[1])],
  });

function input(overrides: Partial<RuleInput> = {}): RuleInput {
  return {
    sender: ALICE,
    callData: execute(TOKEN, transfer),
    gas: { callGasLimit: 100_000n, verificationGasLimit: 200_000n, preVerificationGas: 50_000n, maxFeePerGas: 2_000_000_000n },
    marketMaxFeePerGas: 1_000_000_000n,
    maxCostWei: 700_000_000_000_000n,
    maxCostUsdMicros: 2_100_000n,
    ...overrides,
  };
}

/** The single verdict for `rule` (fails unless exactly one). */
function verdict(rules: StrategyRules, overrides: Partial<RuleInput> = {}, rule?: string): RuleVerdict {
  const verdicts = evaluateRules(rules, input(overrides));
  const matching = rule === undefined ? verdicts : verdicts.filter((v) => v.rule === rule);
  expect(matching, JSON.stringify(verdicts.map((v) => v.rule))).to.have.length(1);
  return matching[0]!;
}

describe("evaluateRules", () => {
  it("no rules, no verdicts", () => {
    expect(evaluateRules({}, input())).to.deep.equal([]);
    expect(evaluateRules({ caps: {}, gasLimits: {} }, input())).to.deep.equal([]);
  });

  it("returns every configured rule, pass or fail, in RULE_ORDER", () => {
    const rules: StrategyRules = {
      maxFeeMultiplierBps: 15_000,
      gasLimits: { maxPreVerificationGas: 1n, maxCallGasLimit: 10n ** 9n, maxVerificationGasLimit: 10n ** 9n },
      caps: { perOp: { maxUsd: "1", maxWei: 10n ** 18n } },
      targets: [{ address: TOKEN }],
      senderAllowlist: [ALICE],
      senderDenylist: [BOB],
      eip7702: { allow: true, delegates: [TOKEN] },
    };
    const verdicts = evaluateRules(rules, input({ eip7702Delegate: TOKEN }));
    expect(verdicts.map((v) => v.rule)).to.deep.equal([...RULE_ORDER]);
    expect(verdicts.map((v) => v.pass)).to.deep.equal([true, true, true, true, true, true, false, true, true, false, false]);
    for (const v of verdicts) expect(v.message).to.be.a("string").and.not.equal("");
  });

  describe("eip7702", () => {
    it("judges only ops with an EIP-7702 delegate: deny, delegate allowlist (case-insensitive), allow", () => {
      expect(evaluateRules({ eip7702: { allow: false } }, input())).to.deep.equal([]);
      expect(verdict({ eip7702: { allow: false } }, { eip7702Delegate: TOKEN })).to.include({ rule: "eip7702.allow", pass: false });
      const listed = verdict({ eip7702: { allow: true, delegates: [TOKEN.toLowerCase() as Address] } }, { eip7702Delegate: TOKEN }, "eip7702.delegates");
      expect(listed.pass).to.equal(true);
      const other = verdict({ eip7702: { allow: true, delegates: [BOB] } }, { eip7702Delegate: TOKEN }, "eip7702.delegates");
      expect(other).to.include({ pass: false, value: TOKEN });
      expect(other.message).to.match(/not on this strategy's delegate allowlist/);
    });
  });

  describe("senderDenylist", () => {
    it("passes a sender not on the list", () => {
      const v = verdict({ senderDenylist: [BOB] });
      expect(v).to.include({ rule: "senderDenylist", pass: true, value: ALICE });
      expect(v.limit).to.deep.equal({ size: 1 });
    });
    it("refuses a listed sender, case-insensitively", () => {
      const v = verdict({ senderDenylist: [BOB, ALICE.toLowerCase() as Address] });
      expect(v).to.include({ rule: "senderDenylist", pass: false, value: ALICE });
      expect(v.limit).to.deep.equal({ size: 2 });
      expect(v.message).to.equal(`Sender ${ALICE} is on this strategy's denylist`);
      expect(verdict({ senderDenylist: [ALICE] }, { sender: ALICE.toUpperCase().replace("0X", "0x") as Address }).pass).to.equal(false);
    });
  });

  describe("senderAllowlist", () => {
    it("passes a listed sender, case-insensitively", () => {
      const v = verdict({ senderAllowlist: [BOB, ALICE] }, { sender: ALICE.toLowerCase() as Address });
      expect(v).to.include({ rule: "senderAllowlist", pass: true, value: ALICE });
      expect(v.limit).to.deep.equal({ size: 2 });
    });
    it("refuses a sender not on the list; an empty list admits nobody", () => {
      const v = verdict({ senderAllowlist: [BOB] });
      expect(v).to.include({ rule: "senderAllowlist", pass: false, value: ALICE });
      expect(v.message).to.equal(`Sender ${ALICE} is not on this strategy's allowlist`);
      expect(verdict({ senderAllowlist: [] }).pass).to.equal(false);
    });
    it("the denylist wins over the allowlist", () => {
      const verdicts = evaluateRules({ senderAllowlist: [ALICE], senderDenylist: [ALICE] }, input());
      expect(verdicts.map((v) => [v.rule, v.pass])).to.deep.equal([
        ["senderDenylist", false],
        ["senderAllowlist", true],
      ]);
    });
  });

  describe("targets", () => {
    const rules: StrategyRules = { targets: [{ address: TOKEN, selectors: [TRANSFER, APPROVE] }, { address: ROUTER }] };

    it("passes calls to listed targets with listed selectors", () => {
      const v = verdict(rules, { callData: batch([[TOKEN, approve], [ROUTER, "0xdeadbeef01"], [TOKEN, transfer]]) });
      expect(v.rule).to.equal("targets");
      expect(v.pass, v.message).to.equal(true);
      expect(v.value).to.deep.equal([
        { target: TOKEN, selector: APPROVE },
        { target: ROUTER, selector: "0xdeadbeef" },
        { target: TOKEN, selector: TRANSFER },
      ]);
      expect(v.limit).to.deep.equal([{ address: TOKEN, selectors: [TRANSFER, APPROVE] }, { address: ROUTER }]);
    });

    it("compares targets and selectors case-insensitively", () => {
      const v = verdict({ targets: [{ address: TOKEN.toLowerCase() as Address, selectors: ["0xA9059CBB"] }] });
      expect(v.pass, v.message).to.equal(true);
    });

    it("refuses a batch where call 1 of 3 goes to an unlisted target, naming it", () => {
      const v = verdict(rules, { callData: batch([[TOKEN, approve], [EVIL, transfer], [TOKEN, transfer]]) });
      expect(v).to.include({ rule: "targets", pass: false });
      expect(v.value).to.deep.equal({ call: 1, target: EVIL, selector: TRANSFER });
      expect(v.message).to.equal(`calls[1] (of 3) goes to ${EVIL}, which is not an allowed target`);
    });

    it("refuses a selector not listed for the target, naming call, target and selector", () => {
      const v = verdict(rules, { callData: batch([[TOKEN, transfer], [TOKEN, transferFrom]]) });
      expect(v).to.include({ rule: "targets", pass: false });
      expect(v.value).to.deep.equal({ call: 1, target: TOKEN, selector: "0x23b872dd" });
      expect(v.message).to.equal(
        `calls[1] (of 2) calls selector 0x23b872dd on ${TOKEN}, which is not among that target's allowed selectors (${TRANSFER}, ${APPROVE})`,
      );
    });

    it("reports the first failing call and counts the others", () => {
      const v = verdict(rules, { callData: batch([[EVIL, "0x"], [TOKEN, transferFrom]]) });
      expect(v.value).to.deep.equal({ call: 0, target: EVIL, selector: null });
      expect(v.message).to.match(/^calls\[0\] \(of 2\) goes to .* \(1 more call\(s\) are not allowed either\)$/);
    });

    it("empty data passes only to a target without a selectors list", () => {
      expect(verdict(rules, { callData: execute(ROUTER, "0x", 5n) }).pass).to.equal(true);
      const v = verdict(rules, { callData: execute(TOKEN, "0x", 5n) });
      expect(v.pass).to.equal(false);
      expect(v.value).to.deep.equal({ call: 0, target: TOKEN, selector: null });
      expect(v.message).to.match(/sends a call with empty data to .*, but that target only allows the selectors 0xa9059cbb, 0x095ea7b3/);
    });

    it("data shorter than a selector fails against a selectors list", () => {
      const v = verdict(rules, { callData: execute(TOKEN, "0xa905") });
      expect(v.pass).to.equal(false);
      expect(v.message).to.match(/2 byte\(s\) of data .* shorter than a selector/);
      expect(verdict(rules, { callData: execute(ROUTER, "0xa905") }).pass).to.equal(true);
    });

    it("an operation without calls passes", () => {
      const v = verdict(rules, { callData: "0x" });
      expect(v).to.include({ pass: true, message: "The operation makes no calls" });
      expect(v.value).to.deep.equal([]);
    });

    it("undecodable callData is refused with the decoder's reason", () => {
      const v = verdict(rules, { callData: transfer });
      expect(v).to.include({ rule: "targets", pass: false });
      expect(v.value).to.deep.equal({ undecodable: "unknown account ABI: selector 0xa9059cbb" });
      expect(v.message).to.contain("unknown account ABI: selector 0xa9059cbb");
    });

    it("undecodable callData is not judged when targets is not set", () => {
      expect(evaluateRules({ senderDenylist: [] }, input({ callData: transfer })).map((v) => v.rule)).to.deep.equal(["senderDenylist"]);
    });

    it("the executeUserOp prefix is refused under v0.6", () => {
      const data = `0x8dd7712f${execute(TOKEN, transfer).slice(2)}` as Hex;
      expect(verdict(rules, { callData: data }).pass).to.equal(true);
      expect(verdict(rules, { callData: data, entryPointVersion: "v0.6" }).pass).to.equal(false);
    });
  });

  describe("caps.perOp", () => {
    it("maxWei: at the cap passes, one wei over fails", () => {
      const atCap = verdict({ caps: { perOp: { maxWei: 700_000_000_000_000n } } });
      expect(atCap).to.deep.include({ rule: "caps.perOp.maxWei", pass: true, limit: "700000000000000", value: "700000000000000" });
      const over = verdict({ caps: { perOp: { maxWei: 700_000_000_000_000n } } }, { maxCostWei: 700_000_000_000_001n });
      expect(over).to.deep.include({ rule: "caps.perOp.maxWei", pass: false, limit: "700000000000000", value: "700000000000001" });
      expect(over.message).to.match(/exceeds this strategy's per-operation cap/);
    });
    it("maxUsd: compares micro-USD, reports decimals", () => {
      const ok = verdict({ caps: { perOp: { maxUsd: "2.1" } } });
      expect(ok).to.deep.include({ rule: "caps.perOp.maxUsd", pass: true, limit: "2.1", value: "2.10" });
      const over = verdict({ caps: { perOp: { maxUsd: "2.1" } } }, { maxCostUsdMicros: 2_100_001n });
      expect(over).to.deep.include({ rule: "caps.perOp.maxUsd", pass: false, limit: "2.1", value: "2.100001" });
      expect(over.message).to.equal("The operation's maximum cost of $2.100001 exceeds this strategy's per-operation cap of $2.1");
    });
  });

  describe("gasLimits", () => {
    const cases = [
      ["maxVerificationGasLimit", "verificationGasLimit", 200_000n],
      ["maxCallGasLimit", "callGasLimit", 100_000n],
      ["maxPreVerificationGas", "preVerificationGas", 50_000n],
    ] as const;
    for (const [limitField, gasField, value] of cases) {
      it(`${limitField}: equal passes, one below fails`, () => {
        const ok = verdict({ gasLimits: { [limitField]: value } });
        expect(ok).to.deep.include({ rule: `gasLimits.${limitField}`, pass: true, limit: value.toString(), value: value.toString() });
        const bad = verdict({ gasLimits: { [limitField]: value - 1n } });
        expect(bad).to.deep.include({ rule: `gasLimits.${limitField}`, pass: false, limit: (value - 1n).toString(), value: value.toString() });
        expect(bad.message).to.equal(`${gasField} ${value} exceeds this strategy's ceiling of ${value - 1n}`);
      });
    }
  });

  describe("maxFeeMultiplierBps", () => {
    it("passes at exactly market x bps / 10000", () => {
      const v = verdict({ maxFeeMultiplierBps: 20_000 });
      expect(v).to.deep.include({ rule: "maxFeeMultiplierBps", pass: true, limit: "2000000000", value: "2000000000" });
    });
    it("refuses one wei above", () => {
      const v = verdict({ maxFeeMultiplierBps: 15_000 }, { gas: { ...input().gas, maxFeePerGas: 1_500_000_001n } });
      expect(v).to.deep.include({ rule: "maxFeeMultiplierBps", pass: false, limit: "1500000000", value: "1500000001" });
      expect(v.message).to.equal("maxFeePerGas 1500000001 wei exceeds 1.5x the market's 1000000000 wei (at most 1500000000 wei)");
    });
    it("is exact when market x bps is not a multiple of 10000", () => {
      // market 3 wei, 1.5x -> 4.5 wei: 4 passes, 5 fails.
      const at = (fee: bigint) => verdict({ maxFeeMultiplierBps: 15_000 }, { marketMaxFeePerGas: 3n, gas: { ...input().gas, maxFeePerGas: fee } });
      expect(at(4n)).to.deep.include({ pass: true, limit: "4" });
      expect(at(5n)).to.deep.include({ pass: false, limit: "4" });
    });
  });
});

describe("capChecks", () => {
  const NOW = Date.UTC(2026, 10, 22, 12, 0, 0) / 1000;

  it("lists global, daily and perSender checks in that order with their keys", () => {
    const rules: StrategyRules = {
      caps: {
        perSender: { maxOps: 3 },
        daily: { maxUsd: "100.5", maxWei: 10n ** 18n },
        global: { maxUsd: "1000", maxOps: 500, maxWei: 5n * 10n ** 18n },
        perOp: { maxWei: 1n },
      },
    };
    expect(capChecks(rules, { now: NOW, sender: ALICE.toLowerCase() as Address })).to.deep.equal([
      { scope: "global", key: "", rulePrefix: "caps.global", maxWei: 5n * 10n ** 18n, maxUsdMicros: 1_000_000_000n, maxOps: 500 },
      { scope: "daily", key: "2026-11-22", rulePrefix: "caps.daily", maxWei: 10n ** 18n, maxUsdMicros: 100_500_000n },
      { scope: "perSender", key: ALICE, rulePrefix: "caps.perSender", maxOps: 3 },
    ]);
  });

  it("no caps, empty caps or only perOp: nothing to check", () => {
    expect(capChecks({}, { now: NOW, sender: ALICE })).to.deep.equal([]);
    expect(capChecks({ caps: { global: {}, perOp: { maxUsd: "1" } } }, { now: NOW, sender: ALICE })).to.deep.equal([]);
  });

  it("the daily key changes at UTC midnight", () => {
    const midnight = Date.UTC(2026, 10, 23, 0, 0, 0) / 1000;
    const rules: StrategyRules = { caps: { daily: { maxOps: 1 } } };
    expect(capChecks(rules, { now: midnight - 1, sender: ALICE })[0]!.key).to.equal("2026-11-22");
    expect(capChecks(rules, { now: midnight, sender: ALICE })[0]!.key).to.equal("2026-11-23");
    expect(capChecks(rules, { now: midnight - 0.5, sender: ALICE })[0]!.key).to.equal("2026-11-22");
    // Across a year end too.
    const newYear = Date.UTC(2027, 0, 1) / 1000;
    expect(utcDayKey(newYear - 1)).to.equal("2026-12-31");
    expect(utcDayKey(newYear)).to.equal("2027-01-01");
  });
});

describe("USD conversions", () => {
  it("usdToMicros is exact and rounds down past 6 decimals", () => {
    expect(usdToMicros("12.5")).to.equal(12_500_000n);
    expect(usdToMicros("12.50")).to.equal(12_500_000n);
    expect(usdToMicros("0")).to.equal(0n);
    expect(usdToMicros("0.000001")).to.equal(1n);
    expect(usdToMicros("0.0000019")).to.equal(1n);
    expect(usdToMicros("1.9999999")).to.equal(1_999_999n);
    expect(usdToMicros("123456789012345678901234567890")).to.equal(123456789012345678901234567890_000000n);
  });

  it("usdToMicros refuses what is not a non-negative decimal", () => {
    for (const bad of ["", "-1", "1.", ".5", "1e3", " 1", "1,5", "$1"]) expect(() => usdToMicros(bad), bad).to.throw(RangeError);
  });

  it("weiToUsdMicros rounds up", () => {
    const eth3000 = { numerator: 3000n, denominator: 1n };
    expect(weiToUsdMicros(10n ** 18n, eth3000)).to.equal(3_000_000_000n);
    expect(weiToUsdMicros(0n, eth3000)).to.equal(0n);
    // 1 wei at $3000 is 3e-15 USD: rounds up to 1 micro.
    expect(weiToUsdMicros(1n, eth3000)).to.equal(1n);
    // 333_333_333 wei x $3000 = 0.999999999 micro -> 1; 333_333_334 wei = 1.000000002 micro -> 2; 666_666_667 wei = 2.000000001 -> 3.
    expect(weiToUsdMicros(333_333_333n, eth3000)).to.equal(1n);
    expect(weiToUsdMicros(333_333_334n, eth3000)).to.equal(2n);
    expect(weiToUsdMicros(666_666_666n, eth3000)).to.equal(2n);
    expect(weiToUsdMicros(666_666_667n, eth3000)).to.equal(3n);
    // $3000.125 = 3000125 / 1000: 0.7 ETH -> 2100.0875 USD exactly.
    expect(weiToUsdMicros(7n * 10n ** 17n, { numerator: 3_000_125n, denominator: 1000n })).to.equal(2_100_087_500n);
  });

  it("weiToUsdMicros refuses negative inputs and zero denominators", () => {
    expect(() => weiToUsdMicros(-1n, { numerator: 1n, denominator: 1n })).to.throw(RangeError);
    expect(() => weiToUsdMicros(1n, { numerator: 1n, denominator: 0n })).to.throw(RangeError);
  });

  it("formatUsdMicros", () => {
    expect(formatUsdMicros(12_500_000n)).to.equal("12.50");
    expect(formatUsdMicros(12_345n)).to.equal("0.012345");
    expect(formatUsdMicros(0n)).to.equal("0.00");
    expect(formatUsdMicros(1_000_001n)).to.equal("1.000001");
  });
});
