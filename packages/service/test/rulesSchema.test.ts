/**
 * Unit tests of strategyRulesSchema / parseStrategyRules / serializeRules: the JSON form of every field, the
 * refusals with their paths, and the round trip parse(serialize(x)) = x.
 */
import { expect } from "chai";
import { getAddress } from "viem";
import { parseStrategyRules, RULE_LIMITS, serializeRules, strategyRulesSchema } from "../src/policy/schema.ts";
import type { StrategyRules } from "../src/policy/types.ts";

const ALICE = getAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
const BOB = getAddress("0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc");
const TOKEN = getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e");

/** A rules document exercising every field. */
function fullJson(): Record<string, any> {
  return {
    senderAllowlist: [ALICE.toLowerCase(), BOB],
    senderDenylist: [TOKEN.toUpperCase().replace("0X", "0x")],
    targets: [{ address: TOKEN.toLowerCase(), selectors: ["0xA9059CBB", "0x095ea7b3"] }, { address: BOB }],
    caps: {
      global: { maxWei: "5000000000000000000", maxUsd: "1000", maxOps: 10_000 },
      daily: { maxUsd: "100.50" },
      perSender: { maxOps: 5, maxWei: 1_000_000 },
      perOp: { maxWei: "123456789012345678901234567890", maxUsd: "0.000001" },
    },
    gasLimits: { maxVerificationGasLimit: 500_000, maxCallGasLimit: "2000000", maxPreVerificationGas: "0" },
    maxFeeMultiplierBps: 15_000,
    maxOutstandingPerClientIp: 2,
  };
}

function parsed(json: unknown): StrategyRules {
  const result = parseStrategyRules(json);
  if (!result.ok) expect.fail(result.errors.join("; "));
  return result.rules;
}
function errors(json: unknown): string[] {
  const result = parseStrategyRules(json);
  if (result.ok) expect.fail("accepted");
  return result.errors;
}
function withField(path: string[], value: unknown): Record<string, any> {
  const doc = fullJson();
  let node = doc;
  for (const key of path.slice(0, -1)) node = node[key];
  if (value === undefined) delete node[path.at(-1)!];
  else node[path.at(-1)!] = value;
  return doc;
}

describe("strategyRulesSchema", () => {
  it("parses every field into domain types", () => {
    expect(parsed(fullJson())).to.deep.equal({
      senderAllowlist: [ALICE, BOB],
      senderDenylist: [TOKEN],
      targets: [{ address: TOKEN, selectors: ["0xa9059cbb", "0x095ea7b3"] }, { address: BOB }],
      caps: {
        global: { maxWei: 5_000_000_000_000_000_000n, maxUsd: "1000", maxOps: 10_000 },
        daily: { maxUsd: "100.50" },
        perSender: { maxOps: 5, maxWei: 1_000_000n },
        perOp: { maxWei: 123456789012345678901234567890n, maxUsd: "0.000001" },
      },
      gasLimits: { maxVerificationGasLimit: 500_000n, maxCallGasLimit: 2_000_000n, maxPreVerificationGas: 0n },
      maxFeeMultiplierBps: 15_000,
      maxOutstandingPerClientIp: 2,
    });
  });

  it("an empty object is no rules; absent fields stay absent", () => {
    expect(parsed({})).to.deep.equal({});
    expect(parsed({ caps: { daily: { maxOps: 1 } } })).to.deep.equal({ caps: { daily: { maxOps: 1 } } });
  });

  it("round-trips: parse(serialize(x)) deep-equals x, through JSON text", () => {
    const x = parsed(fullJson());
    const json = serializeRules(x);
    expect(json.caps?.global?.maxWei).to.equal("5000000000000000000");
    expect(json.gasLimits?.maxVerificationGasLimit).to.equal("500000");
    expect(parsed(JSON.parse(JSON.stringify(json)))).to.deep.equal(x);
    expect(parsed(serializeRules({}))).to.deep.equal({});
    const sparse = parsed({ targets: [{ address: TOKEN }], caps: { perOp: {} }, gasLimits: {} });
    expect(parsed(JSON.parse(JSON.stringify(serializeRules(sparse))))).to.deep.equal(sparse);
  });

  it("serializes bigints as decimal strings and nothing else", () => {
    expect(serializeRules({ caps: { perOp: { maxWei: 10n ** 30n } }, maxFeeMultiplierBps: 10_000 })).to.deep.equal({
      caps: { perOp: { maxWei: "1000000000000000000000000000000" } },
      maxFeeMultiplierBps: 10_000,
    });
  });

  describe("refuses, naming the path", () => {
    const cases: [string, string[], unknown, RegExp][] = [
      ["a bad checksum", ["senderAllowlist", "1"], "0x3c44cdddb6a900fa2b585dd299e03d12fa4293BC", /^senderAllowlist\[1\]: invalid address checksum/],
      ["a short address", ["senderDenylist", "0"], "0x1234", /^senderDenylist\[0\]: expected a 0x-prefixed 20-byte hex address/],
      ["a non-string address", ["senderDenylist", "0"], 5, /^senderDenylist\[0\]: expected an address string, got number/],
      ["a list that is not an array", ["senderAllowlist"], ALICE, /^senderAllowlist: expected an array of addresses, got string/],
      ["a 3-byte selector", ["targets", "0", "selectors", "1"], "0x095ea7", /^targets\[0\]\.selectors\[1\]: expected a 4-byte selector/],
      ["an empty selectors list", ["targets", "0", "selectors"], [], /^targets\[0\]\.selectors: must not be empty/],
      ["a missing target address", ["targets", "1", "address"], undefined, /^targets\[1\]\.address: required$/],
      ["a duplicate target", ["targets", "1", "address"], TOKEN, /^targets\[1\]\.address: duplicate target: already listed at targets\[0\]/],
      ["a negative wei string", ["caps", "global", "maxWei"], "-1", /^caps\.global\.maxWei: expected a non-negative decimal integer string/],
      ["a hex wei string", ["caps", "global", "maxWei"], "0x10", /^caps\.global\.maxWei: expected a non-negative decimal/],
      ["an unsafe integer", ["caps", "perSender", "maxWei"], 2 ** 53, /^caps\.perSender\.maxWei: expected a non-negative integer \(use a decimal string/],
      ["a fractional number", ["gasLimits", "maxCallGasLimit"], 1.5, /^gasLimits\.maxCallGasLimit: expected a non-negative integer/],
      ["2^256", ["caps", "perOp", "maxWei"], (1n << 256n).toString(), /^caps\.perOp\.maxWei: must be below 2\^256/],
      ["a numeric USD", ["caps", "daily", "maxUsd"], 12.5, /^caps\.daily\.maxUsd: expected a USD decimal string such as "12\.50", got number/],
      ["USD with 7 decimals", ["caps", "daily", "maxUsd"], "1.0000001", /^caps\.daily\.maxUsd: expected a non-negative USD decimal string with at most 6 decimals/],
      ["a negative USD", ["caps", "perOp", "maxUsd"], "-1", /^caps\.perOp\.maxUsd: /],
      ["zero maxOps", ["caps", "global", "maxOps"], 0, /^caps\.global\.maxOps: expected a positive integer/],
      ["string maxOps", ["caps", "perSender", "maxOps"], "5", /^caps\.perSender\.maxOps: expected a positive integer/],
      ["maxOps per op", ["caps", "perOp", "maxOps"], 1, /^caps\.perOp: unknown key\(s\) "maxOps" in a per-operation cap object/],
      ["bps below 1x", ["maxFeeMultiplierBps"], 9_999, /^maxFeeMultiplierBps: expected an integer number of basis points from 10000/],
      ["bps above 100x", ["maxFeeMultiplierBps"], 1_000_001, /^maxFeeMultiplierBps: /],
      ["fractional bps", ["maxFeeMultiplierBps"], 15_000.5, /^maxFeeMultiplierBps: /],
      ["no open sponsorship per client", ["maxOutstandingPerClientIp"], 0, /^maxOutstandingPerClientIp: expected an integer from 1 to 1000/],
      ["a string per-client bound", ["maxOutstandingPerClientIp"], "2", /^maxOutstandingPerClientIp: expected an integer from 1 to 1000/],
      ["a misspelt rule", ["senderAllowList"], [ALICE], /^\(root\): unknown key\(s\) "senderAllowList"/],
      ["a misspelt gas limit", ["gasLimits", "maxCallGas"], "1", /^gasLimits: unknown key\(s\) "maxCallGas" in a gasLimits object/],
      ["null caps", ["caps"], null, /^caps: expected a caps object, got null/],
      ["null cap", ["caps", "daily"], null, /^caps\.daily: expected a cap object, got null/],
    ];
    for (const [name, path, value, expected] of cases) {
      it(name, () => {
        const errs = errors(withField(path, value));
        expect(errs, errs.join("; ")).to.have.length(1);
        expect(errs[0]).to.match(expected);
      });
    }

    it("the limits of the boundaries are accepted", () => {
      expect(parsed({ maxFeeMultiplierBps: 10_000 }).maxFeeMultiplierBps).to.equal(10_000);
      expect(parsed({ maxFeeMultiplierBps: 1_000_000 }).maxFeeMultiplierBps).to.equal(1_000_000);
      expect(parsed({ caps: { perOp: { maxWei: RULE_LIMITS.maxUint.toString() } } }).caps?.perOp?.maxWei).to.equal(RULE_LIMITS.maxUint);
      expect(parsed({ caps: { perOp: { maxWei: Number.MAX_SAFE_INTEGER } } }).caps?.perOp?.maxWei).to.equal(BigInt(Number.MAX_SAFE_INTEGER));
    });

    it("not an object", () => {
      expect(errors(null)).to.deep.equal(["(root): expected a strategy rules object, got null"]);
      expect(errors([])).to.deep.equal(["(root): expected a strategy rules object, got array"]);
    });

    it("reports every issue at once", () => {
      const doc = fullJson();
      doc.caps.global.maxOps = -1;
      doc.targets[0].selectors[0] = "0x";
      doc.maxFeeMultiplierBps = 0;
      expect(errors(doc).map((e) => e.split(":")[0])).to.have.members(["targets[0].selectors[0]", "caps.global.maxOps", "maxFeeMultiplierBps"]);
    });

    it("list sizes are bounded", () => {
      const many = Array.from({ length: RULE_LIMITS.selectorsPerTarget + 1 }, (_, i) => `0x${i.toString(16).padStart(8, "0")}`);
      expect(errors({ targets: [{ address: TOKEN, selectors: many }] })).to.deep.equal([
        `targets[0].selectors: at most ${RULE_LIMITS.selectorsPerTarget} selectors`,
      ]);
    });
  });

  it("the schema itself gives zod issues with paths", () => {
    const result = strategyRulesSchema.safeParse({ caps: { daily: { maxUsd: "x" } } });
    expect(result.success).to.equal(false);
    expect(result.error?.issues[0]?.path).to.deep.equal(["caps", "daily", "maxUsd"]);
  });
});
