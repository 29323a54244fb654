// Fuzz-style, against the real pm_sponsorUserOperation of the embedded stack (local chain, SQLite file, the
// service on 127.0.0.1): a few hundred deterministic pseudo-random malformed bodies, each built from a valid
// request by one mutation whose refusal is known in advance (truncated JSON, bad UTF-8, type swaps, odd
// hex, huge numbers, wrong envelopes, unknown fields, oversized fields, strategy_code with token, ...).
// Every answer must be a 4xx JSON envelope with the expected data.reason and no internal text; nothing is
// recorded for the fuzzed senders; afterwards a fresh wallet is still sponsored and its op succeeds on chain.
// The same on PostgreSQL (a NUL in a string param once answered 500 there, where SQLite answered 4xx).
import { expect } from "chai";
import { REASONS } from "../src/errors.ts";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import {
  call,
  chainRequest,
  allowTank,
  handleOps,
  mint,
  newWallet,
  opFromResponse,
  signAsOwner,
  startTestStack,
  wireOp,
  type Embedded,
} from "./helpers/stack.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { prng } from "./helpers/prng.ts";

type Obj = Record<string, unknown>;

interface Template {
  version: "v0.6" | "v0.7";
  userOp: Record<string, string>;
  extra: Obj;
}

interface Case {
  kind: string;
  body: string | Uint8Array;
  /** The reasons this body may be refused with (all 4xx). */
  reasons: readonly (keyof typeof REASONS)[];
}

const COUNT = 300;
const CONCURRENCY = 8;

const QUANTITY_FIELDS = ["nonce", "callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas"];
const GAS_FIELDS = ["callGasLimit", "verificationGasLimit", "preVerificationGas"];
const FEE_FIELDS = ["maxFeePerGas", "maxPriorityFeePerGas"];
const REQUIRED_FIELDS = ["sender", "nonce", "callData", "signature"];
/** Raw JSON (not strings) put where a 0x-hex string belongs. */
const NON_STRINGS = ["null", "0", "1", "-1", "1.5", "true", "false", "[]", "{}", '["0x00"]', '{"hex":"0x00"}', "1e400", "123456789012345678901234567890", "1".repeat(400)];

/** Builds every malformed case from the valid templates, deterministically. */
function generateCases(random: () => number, templates: readonly Template[], strategyCode: string, bodyLimitBytes: number): Case[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const hexDigits = (n: number) => Array.from({ length: n }, () => "0123456789abcdef"[int(0, 15)]).join("");

  const envelope = (t: Template, params: unknown = [t.userOp, t.extra]): Obj => ({ id: int(1, 1_000_000), jsonrpc: "2.0", method: "pm_sponsorUserOperation", params });
  const withOp = (t: Template, patch: (op: Obj) => void, extra: Obj = t.extra): string => {
    const op: Obj = { ...t.userOp };
    patch(op);
    return JSON.stringify(envelope(t, [op, extra]));
  };
  /** `valid` with the JSON value of `key` in the userOp replaced by raw JSON text. */
  const rawField = (t: Template, key: string, raw: string): string => {
    const marker = "__RAW_VALUE__";
    return withOp(t, (op) => (op[key] = marker)).replace(`"${marker}"`, raw);
  };
  const fieldsOf = (t: Template) => Object.keys(t.userOp);
  const ofVersion = (version: Template["version"]) => pick(templates.filter((t) => t.version === version));

  const generators: Record<string, (t: Template) => Omit<Case, "kind">> = {
    truncated(t) {
      const text = JSON.stringify(envelope(t));
      return { body: text.slice(0, int(0, text.length - 1)), reasons: ["PARSE_ERROR"] };
    },
    trailingGarbage(t) {
      const text = JSON.stringify(envelope(t));
      return { body: text + pick(["x", ",", "}", text, " {}", "\u0000", "]"]), reasons: ["PARSE_ERROR"] };
    },
    badUtf8(t) {
      const bytes = Buffer.from(JSON.stringify(envelope(t)), "utf8");
      const at = int(0, bytes.length);
      const bad = Buffer.from(pick([[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]]));
      return { body: new Uint8Array(Buffer.concat([bytes.subarray(0, at), bad, bytes.subarray(at)])), reasons: ["PARSE_ERROR"] };
    },
    notAnObject(t) {
      const text = JSON.stringify(envelope(t));
      return { body: pick(["null", "[]", "42", '"pm_sponsorUserOperation"', `[${text}]`, `[${text},${text}]`, "true"]), reasons: ["INVALID_REQUEST"] };
    },
    badEnvelopeField(t) {
      const body = envelope(t);
      const [field, value] = pick<[string, unknown]>([
        ["jsonrpc", "1.0"],
        ["jsonrpc", 2],
        ["jsonrpc", null],
        ["jsonrpc", undefined],
        ["id", "1"],
        ["id", 1.5],
        ["id", null],
        ["id", undefined],
        ["id", 2 ** 60],
        ["id", [1]],
        ["method", undefined],
        ["method", 5],
        ["method", ""],
        ["method", "m".repeat(200)],
        ["method", ["pm_sponsorUserOperation"]],
        ["params", { 0: {}, 1: {} }],
        ["params", "[]"],
        ["params", null],
        ["params", 2],
      ]);
      if (value === undefined) delete body[field];
      else body[field] = value;
      return { body: JSON.stringify(body), reasons: ["INVALID_REQUEST"] };
    },
    unknownEnvelopeField(t) {
      return { body: JSON.stringify({ ...envelope(t), [pick(["ID", "result", "apiKey", "network", "extra", "x".repeat(300)])]: 1 }), reasons: ["INVALID_REQUEST"] };
    },
    duplicateEnvelopeKey(t) {
      // JSON.parse keeps the last of duplicate keys.
      const text = JSON.stringify(envelope(t));
      return { body: text.replace(/}$/, `,${pick(['"id":"x"', '"jsonrpc":"1.0"', '"params":{}', '"method":7'])}}`), reasons: ["INVALID_REQUEST"] };
    },
    unknownMethod(t) {
      const body = { ...envelope(t), method: pick(["pm_sponsorUserOp", "PM_SPONSORUSEROPERATION", "pm_sponsorUserOperation ", "eth_sendUserOperation", "__proto__", "constructor"]) };
      return { body: JSON.stringify(body), reasons: ["METHOD_NOT_FOUND"] };
    },
    paramsArity(t) {
      const params = pick<unknown[]>([[], [t.userOp], [t.userOp, t.extra, {}], [t.extra, t.userOp, t.extra], [[t.userOp, t.extra]]]);
      return { body: JSON.stringify(envelope(t, params)), reasons: ["INVALID_PARAMS"] };
    },
    userOpNotObject(t) {
      return { body: JSON.stringify(envelope(t, [pick([null, "0x", [], 5, [t.userOp], true]), t.extra])), reasons: ["INVALID_PARAMS"] };
    },
    extraNotObject(t) {
      return { body: JSON.stringify(envelope(t, [t.userOp, pick([null, [], "DEMO", 5, [t.extra], true])])), reasons: ["INVALID_PARAMS"] };
    },
    typeSwap(t) {
      return { body: rawField(t, pick(fieldsOf(t)), pick(NON_STRINGS)), reasons: ["INVALID_PARAMS"] };
    },
    missingField(t) {
      return { body: withOp(t, (op) => delete op[pick(REQUIRED_FIELDS)]), reasons: ["INVALID_PARAMS"] };
    },
    oddQuantity(t) {
      const key = pick(QUANTITY_FIELDS.filter((k) => k in t.userOp));
      const value = t.userOp[key]!;
      const bad = pick(["0x", "0xzz", value.slice(2) || "12", `0X${value.slice(2)}`, ` ${value}`, `${value} `, "0x-1", "-0x1", `0x${"1".repeat(65)}`, "0x1.5", "0x1_000", "", "١٢"]);
      return { body: withOp(t, (op) => (op[key] = bad)), reasons: ["INVALID_PARAMS"] };
    },
    oddBytes(t) {
      const key = pick(["callData", "signature", ...(t.userOp.initCode ? ["initCode"] : []), ...(t.userOp.factoryData ? ["factoryData"] : [])]);
      const value = t.userOp[key]!;
      const bad = pick([`${value}0`, `0x${value.slice(3)}`, `${value}gg`, value.slice(2) || "ab", `0X${value.slice(2)}`, `${value} `, `0x${"z".repeat(4)}`]);
      return { body: withOp(t, (op) => (op[key] = bad)), reasons: ["INVALID_PARAMS"] };
    },
    badAddress(t) {
      const key = t.userOp.factory && random() < 0.3 ? "factory" : "sender";
      const value = t.userOp[key]!;
      const letters = [...value.slice(2)].map((c, i) => (/[a-fA-F]/.test(c) ? i + 2 : -1)).filter((i) => i >= 0);
      const flipAt = letters.length > 2 ? pick(letters) : -1;
      const flipped = flipAt < 0 ? `${value}0` : value.slice(0, flipAt) + (value[flipAt] === value[flipAt]!.toLowerCase() ? value[flipAt]!.toUpperCase() : value[flipAt]!.toLowerCase()) + value.slice(flipAt + 1);
      const bad = pick([value.slice(0, -1), `${value}0`, value.slice(2), `0x${"0".repeat(64)}`, flipped, "0x", value.replace(/^0x/, "0X")]);
      return { body: withOp(t, (op) => (op[key] = bad)), reasons: ["INVALID_PARAMS"] };
    },
    hugeNumber(t) {
      const [key, bad] = pick<[string, string]>([
        [pick(GAS_FIELDS), `0x1${"0".repeat(16)}`], // 2^64
        [pick(GAS_FIELDS), `0x${"f".repeat(int(17, 64))}`],
        [pick(FEE_FIELDS), `0x1${"0".repeat(32)}`], // 2^128
        [pick(FEE_FIELDS), `0x${"f".repeat(int(33, 64))}`],
        ["nonce", `0x1${"0".repeat(64)}`], // 65 digits
        ["nonce", `0x${"f".repeat(int(65, 400))}`],
      ]);
      return { body: withOp(t, (op) => (op[key] = bad)), reasons: ["INVALID_PARAMS"] };
    },
    unknownUserOpField(t) {
      const key =
        t.version === "v0.6"
          ? pick(["factory", "factoryData", "paymaster", "paymasterVerificationGasLimit", "accountGasLimits", "gasFees", "Sender", "x", "🔑"])
          : pick(["accountGasLimits", "gasFees", "Sender", "x", "🔑", "chainId"]);
      return { body: withOp(t, (op) => (op[key] = "0x00")), reasons: ["INVALID_PARAMS"] };
    },
    protoKey(t) {
      // An own "__proto__" key, as JSON.parse creates it, in the userOp or in the extra data.
      const text = JSON.stringify(envelope(t));
      const inUserOp = random() < 0.5;
      const at = inUserOp ? text.indexOf('"sender"') : text.lastIndexOf("{") + 1;
      const insert = `"__proto__":${pick(['{"callGasLimit":"0x1"}', '"0x00"', "null", "{}"])}${text[at] === "}" ? "" : ","}`;
      return { body: text.slice(0, at) + insert + text.slice(at), reasons: ["INVALID_PARAMS"] };
    },
    unknownExtraField(t) {
      const key = pick(["strategy", "strategyCode", "Token", "chainId", "entryPoint", "sponsor", "version2", "k".repeat(300)]);
      return { body: withOp(t, () => {}, { ...t.extra, [key]: pick(["x", 1, null, {}]) }), reasons: ["INVALID_PARAMS"] };
    },
    badExtraType(t) {
      const [key, value] = pick<[string, unknown]>([
        ["strategy_code", 5],
        ["strategy_code", null],
        ["strategy_code", [strategyCode]],
        ["strategy_code", { code: strategyCode }],
        ["token", 6],
        ["token", false],
        ["token", ["USDC"]],
        ["version", 0.7],
        ["version", null],
        ["version", ["v0.7"]],
      ]);
      return { body: withOp(t, () => {}, { ...t.extra, [key]: value }), reasons: ["INVALID_PARAMS"] };
    },
    unsupportedVersion(t) {
      const version = pick(["v0.5", "v0.9", "0.7", "V0.7", "v0.70", "v0.6 ", "", "latest", "v".repeat(500)]);
      return { body: withOp(t, () => {}, { ...t.extra, version }), reasons: ["UNSUPPORTED_ENTRYPOINT_VERSION"] };
    },
    wrongVersionFields() {
      // A v0.7 op (ERC-7769 names) sent as v0.6. (The other way round is valid: v0.7 also takes the spec's initCode.)
      const v06 = ofVersion("v0.6");
      const v07 = templates.find((t) => t.version === "v0.7" && t.userOp.factory !== undefined)!;
      return { body: JSON.stringify(envelope(v06, [v07.userOp, v06.extra])), reasons: ["INVALID_PARAMS"] };
    },
    oversizedField(t) {
      const [key, bytes] = pick<[string, number]>([
        ["callData", 48 * 1024 + int(1, 4096)],
        ["signature", 2 * 1024 + int(1, 4096)],
        [t.version === "v0.6" ? "initCode" : "factoryData", 16 * 1024 + int(1, 4096)],
        ["paymasterAndData", 16 * 1024 + int(1, 4096)],
      ]);
      return { body: withOp(t, (op) => (op[key] = `0x${"ab".repeat(bytes)}`)), reasons: ["INVALID_PARAMS"] };
    },
    oversizedExtra(t) {
      const key = pick(["strategy_code", "token"]);
      return { body: withOp(t, () => {}, { ...(key === "token" ? {} : t.extra), version: t.version, [key]: "S".repeat(int(129, 5000)) }), reasons: ["INVALID_PARAMS"] };
    },
    bodyTooLarge(t) {
      const size = bodyLimitBytes + int(1, 200_000);
      const body = withOp(t, (op) => (op.callData = `0x${"cd".repeat(Math.ceil(size / 2))}`));
      return { body, reasons: ["BODY_TOO_LARGE"] };
    },
    strategyAndToken(t) {
      return { body: withOp(t, () => {}, { strategy_code: strategyCode, token: pick(["USDC", "DAI", "nope"]), ...(t.version === "v0.7" ? { version: "v0.7" } : {}) }), reasons: ["MODE_CONFLICT"] };
    },
    v07InitCodeShape() {
      const t = ofVersion("v0.7");
      const factory = t.userOp.factory ?? t.userOp.initCode!.slice(0, 42);
      const patch = pick<(op: Obj) => void>([
        (op) => {
          // Both forms at once.
          op.factory = factory;
          op.initCode = `${factory}${hexDigits(8)}`;
        },
        (op) => {
          delete op.factory;
          delete op.factoryData;
          op.initCode = `0x${hexDigits(2 * int(1, 19))}`; // 1..19 bytes: neither empty nor a factory address
        },
        (op) => {
          delete op.factory;
          op.factoryData = "0x1234"; // factoryData without a factory
        },
      ]);
      return { body: withOp(t, patch), reasons: ["INVALID_PARAMS"] };
    },
    weirdStrategyCode(t) {
      // Well-formed but unknown strategy codes: looked up and refused, never a 5xx.
      const code = pick(["\ud800", "' OR 1=1 --", "%00", "DEMO ", "🔑", "\\", "null"]);
      return { body: withOp(t, () => {}, { strategy_code: code, ...(t.version === "v0.7" ? { version: "v0.7" } : {}) }), reasons: ["STRATEGY_NOT_FOUND"] };
    },
    weirdToken(t) {
      const token = pick(["USD C", "\ud83d", "0x", `0x${"00".repeat(20)}`, "' OR 1=1 --", "ETH", "0xZZ"]);
      return { body: withOp(t, () => {}, { token, ...(t.version === "v0.7" ? { version: "v0.7" } : {}) }), reasons: ["TOKEN_NOT_SUPPORTED"] };
    },
    controlInExtra(t) {
      // NUL, other controls and bidi overrides are not text the service takes: refused before any lookup.
      const key = pick(["strategy_code", "token"]);
      const value = `${key === "token" ? "USDC" : strategyCode}${pick(["\u0000", "\u001b[2J", "\u0085", "\u202e", "\u2066", "\r"])}`;
      return { body: withOp(t, () => {}, { [key]: value, ...(t.version === "v0.7" ? { version: "v0.7" } : {}) }), reasons: ["INVALID_PARAMS"] };
    },
    deepNesting(t) {
      const depth = pick([50, 1_000, 20_000]);
      const nested = "[".repeat(depth) + "]".repeat(depth);
      return { body: rawField(t, pick(fieldsOf(t)), nested), reasons: ["INVALID_PARAMS", "PARSE_ERROR"] };
    },
  };

  const kinds = Object.keys(generators);
  return Array.from({ length: COUNT }, (_, index) => {
    // Every kind at least once, then at random.
    const kind = index < kinds.length ? kinds[index]! : pick(kinds);
    const template = pick(templates);
    return { kind, ...generators[kind]!(template) };
  });
}

/** Text that would mean internals leaked: stack frames, error class prefixes, file paths. */
const INTERNAL_TEXT = [/\n\s*at /, /\bat \S+ \(/, /\bat (?:file:|node:|\/)/, /\w*Error:/, /SyntaxError|TypeError|RangeError|ReferenceError/, /file:\/\//, /\/(?:work|home|tmp|usr|root)\//, /node_modules/, /\.[cm]?[jt]s:\d+/, /SQLITE_/];

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`fuzz: malformed pm_sponsorUserOperation bodies against the embedded stack (${backend})`, function () {
    this.timeout(60_000);
    let embedded: Embedded;
    let database: TestDatabase | undefined;
    let templates: Template[];
    /** Sponsorships ever recorded for `sender` (any status), oldest first. */
    const recorded = async (sender: string) =>
      (await embedded.running.service.store.listSponsorships({ network: "local", sender: sender as `0x${string}`, limit: 1000 })).reverse();
    const count = async (sender: string) => (await recorded(sender)).length;

    before(async () => {
      if (backend === "PostgreSQL") database = await createTestDatabase("paymaster_fuzz");
      embedded = await startTestStack(database ? { databaseUrl: database.url } : {});
      const v06 = await newWallet(embedded, "v0.6");
      const v07 = await newWallet(embedded, "v0.7");
      await allowTank(embedded.running.service.store, v07.sender, embedded.projectId); // its User Sponsor template
      const erc20 = await newWallet(embedded, "v0.6");
      await mint(embedded, "USDC", erc20.sender, 1_000n * 10n ** 6n);
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
      const { baseFeePerGas } = await chainRequest<{ baseFeePerGas: string }>(embedded, "eth_getBlockByNumber", ["latest", false]);
      const fees = { maxFeePerGas: `0x${(BigInt(baseFeePerGas) * 2n + 10n ** 9n).toString(16)}`, maxPriorityFeePerGas: "0x3b9aca00" };
      const gas = { callGasLimit: "0xc350", verificationGasLimit: "0x7a120", preVerificationGas: "0xc350", ...fees };
      const strategy = embedded.strategyCode;
      const v07SpecNames = (() => {
        const { factory, factoryData, ...rest } = wireOp(v07, executeCallData(v07.owner.address)) as Record<string, string>;
        return { ...rest, initCode: `${factory}${factoryData!.slice(2)}` };
      })();
      templates = [
        { version: "v0.6", userOp: { ...(wireOp(v06, executeCallData(v06.owner.address)) as Record<string, string>), ...gas }, extra: { strategy_code: strategy } },
        { version: "v0.7", userOp: wireOp(v07, executeCallData(v07.owner.address)) as Record<string, string>, extra: { strategy_code: strategy, version: "v0.7" } },
        { version: "v0.7", userOp: v07SpecNames, extra: { version: "v0.7" } },
        { version: "v0.6", userOp: wireOp(erc20, approveCallData(usdc, embedded.stack.manifest.entryPoints["v0.6"].erc20Paymaster)) as Record<string, string>, extra: { token: "USDC" } },
      ];
    });
    after(async () => {
      await embedded?.close();
      await database?.drop();
    });

    it("the templates are valid requests (pm_estimateUserOperationGas answers 200 for each, reserving nothing)", async () => {
      for (const t of templates) {
        const { status, body } = await call(embedded.endpoint, "pm_estimateUserOperationGas", [t.userOp, t.extra]);
        expect(status, JSON.stringify(body)).to.equal(200);
        expect(await count(t.userOp.sender!)).to.equal(0);
      }
    });

    it(`${COUNT} malformed bodies each get a 4xx JSON envelope with the expected reason and no internal text`, async () => {
      const cases = generateCases(prng(0x4337_f00d), templates, embedded.strategyCode, embedded.running.service.config.bodyLimitBytes);
      const started = Date.now();
      const failures: string[] = [];
      const seen = new Map<string, number>();
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < cases.length) {
          const index = next++;
          const { kind, body, reasons } = cases[index]!;
          const response = await fetch(embedded.endpoint, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json" },
            body,
          });
          const text = await response.text();
          const where = `#${index} ${kind}: ${response.status} ${text.slice(0, 300)}`;
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            failures.push(`not JSON ${where}`);
            continue;
          }
          const reason = json?.data?.reason;
          seen.set(reason, (seen.get(reason) ?? 0) + 1);
          if (response.status < 400 || response.status >= 500) failures.push(`status ${where}`);
          if (Object.keys(json).join() !== "code,message,data,cost" || json.code !== response.status) failures.push(`envelope ${where}`);
          if (!(reasons as readonly string[]).includes(reason)) failures.push(`reason (expected ${reasons.join("|")}) ${where}`);
          if (typeof json.message !== "string" || json.message === "") failures.push(`message ${where}`);
          if (REASONS[reason as keyof typeof REASONS]?.status !== response.status) failures.push(`status of reason ${where}`);
          for (const pattern of INTERNAL_TEXT) if (pattern.test(text)) failures.push(`internal text ${pattern} ${where}`);
          if (text.length > 8_000) failures.push(`answer too long (${text.length}) #${index} ${kind}`);
          if ((response.headers.get("content-type") ?? "").split(";")[0] !== "application/json") failures.push(`content-type ${where}`);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const elapsed = Date.now() - started;

      expect(failures, `${failures.length} failures:\n${failures.slice(0, 10).join("\n")}`).to.deep.equal([]);
      // The mix really covers the catalogue's request-side refusals.
      expect([...seen.keys()].sort()).to.deep.equal(
        [
          "BODY_TOO_LARGE",
          "INVALID_PARAMS",
          "INVALID_REQUEST",
          "METHOD_NOT_FOUND",
          "MODE_CONFLICT",
          "PARSE_ERROR",
          "STRATEGY_NOT_FOUND",
          "TOKEN_NOT_SUPPORTED",
          "UNSUPPORTED_ENTRYPOINT_VERSION",
        ].sort(),
      );
      expect(elapsed, "bounded in time").to.be.below(30_000);
      // Nothing malformed was reserved or signed.
      for (const t of templates) expect(await count(t.userOp.sender!), t.userOp.sender).to.equal(0);
    });

    it("the service still sponsors afterwards: a fresh wallet's op is signed (200) and succeeds through handleOps", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode }]);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.data.strategyId).to.equal(embedded.strategyCode);
      const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(true);
      expect(outcome.event!.paymaster).to.equal(embedded.stack.manifest.entryPoints["v0.6"].verifyingPaymaster);
      const record = await embedded.running.service.store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      expect(record?.status).to.equal("signed");
      expect((await recorded(wallet.sender)).map((r) => r.status)).to.deep.equal(["signed"]);
    });
  });
}
