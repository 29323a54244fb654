// One chain round trip per sponsorship (issue 45, docs/pipeline.md "One round trip"): the estimate's simulation,
// made through the sponsorship probe, decides whether the signed op lands, so pm_sponsorUserOperation waits for one
// eth_call in every mode. Never sign what would fail on chain: a seeded random mix of ops in every mode and version
// is signed and every one lands through handleOps on the local chain; each fallback the probe can meet is driven on
// the real chain and its op still lands, or is refused as before.
import { mkdtempSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { encodeAbiParameters, encodeFunctionData, erc20Abi, getAbiItem, maxUint256, toFunctionSelector, toHex, type Abi, type AbiFunction } from "viem";
import { PaymasterDataAccountArtifact, PaymasterDataAccountFactoryArtifact, SponsorProbeArtifact } from "@paymaster/contracts/artifacts";
import { ChargeMode, STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { approveCallData, embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService, type RunningService } from "../src/server.ts";
import { simulateOp, type SimulatedOp } from "../src/chain/entryPoint.ts";
import { PROBE_ADDRESS, PROBE_CODE_OVERRIDE, probeSponsorship } from "../src/chain/probe.ts";
import { oneCallVerdict, type OneCallInput } from "../src/sponsor/oneCall.ts";
import { ACCEPTED_SIGNATURE_GAS, PROBE_REFUSALS_IN_A_ROW } from "../src/sponsor/probe.ts";
import type { SponsorMode } from "../src/policy/types.ts";
import { prng } from "./helpers/prng.ts";
import { openSponsorshipReader } from "./helpers/sponsorships.ts";
import {
  call,
  chainRequest,
  until,
  clientGasFields,
  eip7702AuthWire,
  fundTank,
  handleOps,
  mint,
  new7702Wallet,
  newWallet,
  opFromResponse,
  projectEndpoints,
  signAsOwner,
  startTestStack,
  wireOp,
  type Embedded,
  type Wallet,
} from "./helpers/stack.ts";

type Counts = Map<string, number>;

/** The one-call counters of a service, by "mode version" and "mode version reason". */
async function oneCallCounts(running: RunningService): Promise<{ oneCall: Counts; fallbacks: Counts }> {
  const text = await running.service.metrics!.registry.metrics();
  const oneCall: Counts = new Map();
  const fallbacks: Counts = new Map();
  for (const m of text.matchAll(/^paymaster_one_call_sponsorships_total\{[^}]*mode="(\w+)",version="([\w.]+)"\} (\d+)/gm)) oneCall.set(`${m[1]} ${m[2]}`, Number(m[3]));
  for (const m of text.matchAll(/^paymaster_one_call_fallbacks_total\{[^}]*mode="(\w+)",version="([\w.]+)",reason="(\w+)"\} (\d+)/gm)) fallbacks.set(`${m[1]} ${m[2]} ${m[3]}`, Number(m[4]));
  return { oneCall, fallbacks };
}

function delta(after: Counts, before: Counts): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of after) if (n - (before.get(key) ?? 0) > 0) out[key] = n - (before.get(key) ?? 0);
  return out;
}

/** The service's chain requests of `method` (eth_call by default) so far. */
async function ethCalls(running: RunningService, method = "eth_call"): Promise<number> {
  const text = await running.service.metrics!.registry.metrics();
  let total = 0;
  for (const m of text.matchAll(/^paymaster_rpc_requests_total\{[^}]*method="([\w]+)"[^}]*\} (\d+)/gm)) if (m[1] === method) total += Number(m[2]);
  return total;
}

/** The service's eth_call count once it has not moved for 300 ms (the background reads of the last block are done). */
async function quiet(running: RunningService): Promise<number> {
  let last = await ethCalls(running);
  for (let i = 0; i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await ethCalls(running);
    if (now === last) return now;
    last = now;
  }
  throw new Error("the service's background chain reads never went quiet");
}

/** The v0.6-v0.8 SimpleAccount execute(token, 0, transfer(to, amount)). */
function transferCallData(token: Address, to: Address, amount: bigint): Hex {
  return executeCallData(token, encodeFunctionData({ abi: erc20Abi as Abi, functionName: "transfer", args: [to, amount] }));
}

describe("one chain round trip per sponsorship (the estimate's probe decides; embedded local chain, real HTTP)", function () {
  this.timeout(300_000);
  let embedded: Embedded;
  let usdc: Address;

  before(async () => {
    embedded = await startTestStack();
    usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
  });
  after(async () => {
    await embedded?.close();
  });

  const paymasterOf = (version: EntryPointVersion, mode: SponsorMode) => embedded.stack.manifest.entryPoints[version][mode === "erc20" ? "erc20Paymaster" : "verifyingPaymaster"];
  const extraFor = (version: EntryPointVersion, mode: SponsorMode): Record<string, string> => ({
    ...(version === "v0.6" ? {} : { version }),
    ...(mode === "sponsor" ? { strategy_code: embedded.strategyCode } : mode === "erc20" ? { token: "USDC" } : {}),
  });

  /** A service of its own for `version` alone, reaching the chain through `front`, its log lines kept. */
  async function serviceBehind(front: { url: string }, version: EntryPointVersion): Promise<{ running: RunningService; logs: Record<string, any>[] }> {
    const logs: Record<string, any>[] = [];
    const { createLogger } = await import("../src/log.ts");
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    const network = { ...localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: front.url, signerKey: embedded.stack.signer.privateKey }), entryPoints: { [version]: embedded.stack.manifest.entryPoints[version] } };
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-behind-front-")), "data");
    return { running: await startService(embeddedConfig(network, dataDir, 0, "info"), { logger, pollMs: 100, watch: false }), logs };
  }

  /** `body` run on a service of its own for `version` behind a front to the chain with `options`; both closed after it, whatever happens. */
  async function behindFront(
    options: Parameters<typeof startOverrideRefusingFront>[1],
    version: EntryPointVersion,
    body: (s: { front: Awaited<ReturnType<typeof startOverrideRefusingFront>>; running: RunningService; logs: Record<string, any>[] }) => Promise<void>,
  ): Promise<void> {
    const front = await startOverrideRefusingFront(embedded.stack.chain.url, options);
    try {
      const { running, logs } = await serviceBehind(front, version);
      try {
        await body({ front, running, logs });
      } finally {
        await running.close();
      }
    } finally {
      await front.close();
    }
  }

  /** The warnings that the probe was left off. */
  const probeWarnings = (logs: Record<string, any>[]) => logs.filter((l) => String(l.msg).startsWith("the node refused the sponsorship probe"));

  /** Sponsors `wire` for `wallet` in `mode`, signs it as the owner and lands it; returns the sponsor answer. */
  async function sponsorAndLand(wallet: Wallet, wire: ReturnType<typeof wireOp>, mode: SponsorMode): Promise<any> {
    const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor(wallet.version, mode)]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
    expect(outcome.reverted, `${wallet.version} ${mode}: ${outcome.failedOp}`).to.equal(false);
    expect(outcome.event?.success, `${wallet.version} ${mode}: the op's execution succeeded`).to.equal(true);
    return body.data;
  }

  /** A sender of `kind` whose next op has `nonce`: deployed ones by a first sponsored op that lands (optionally approving the ERC-20 paymaster). */
  async function senderOf(version: EntryPointVersion, kind: "fresh" | "deployed" | "7702" | "delegated", approve: boolean): Promise<{ wallet: Wallet; nonce: bigint; deploy: boolean }> {
    const wallet = kind === "7702" || kind === "delegated" ? await new7702Wallet(embedded) : await newWallet(embedded, version);
    if (kind === "fresh" || kind === "7702") return { wallet, nonce: 0n, deploy: true };
    const first = approve ? approveCallData(usdc, paymasterOf(version, "erc20")) : executeCallData(wallet.owner.address);
    await sponsorAndLand(wallet, wireOp(wallet, first), "sponsor");
    return { wallet, nonce: 1n, deploy: false };
  }

  it("pm_sponsorUserOperation makes ONE eth_call in every mode and version (was two; ERC-20: five, three one after the other)", async () => {
    const running = embedded.running;
    for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
      for (const mode of ["sponsor", "erc20", "user"] as const) {
        const wallet = await newWallet(embedded, version);
        if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        if (mode === "user") await fundTank(running.service.store, wallet.sender, 10n ** 17n, embedded.projectId);
        const callData = mode === "erc20" ? approveCallData(usdc, paymasterOf(version, "erc20")) : executeCallData(wallet.owner.address);
        // A first request of the mode warms what is read once per block (the token allowlist, the deposits); then
        // the background reads the last block started are let finish (no block comes while the request runs).
        const warm = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(wallet, callData), extraFor(version, mode)]);
        expect(warm.status, JSON.stringify(warm.body)).to.equal(200);
        // The service's periodic reads (the deposit and signer monitor every 15 s, prices every 10 s) may fall in
        // a request's window: the fewest of up to three requests counts.
        const counted: number[] = [];
        while (counted.length < 3 && !counted.includes(1)) {
          const before = await quiet(running);
          const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(wallet, callData), extraFor(version, mode)]);
          expect(status, JSON.stringify(body)).to.equal(200);
          counted.push((await ethCalls(running)) - before);
        }
        expect(Math.min(...counted), `${version} ${mode}: eth_calls for one sponsorship (${counted.join(", ")})`).to.equal(1);
      }
    }
  });

  it("pm_estimateUserOperationGas makes ONE eth_call too when the probe decided (was two: the probe, then the landing check), in every version and mode", async () => {
    const running = embedded.running;
    for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
      for (const mode of ["sponsor", "erc20"] as const) {
        const wallet = await newWallet(embedded, version);
        if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        const callData = mode === "erc20" ? approveCallData(usdc, paymasterOf(version, "erc20")) : executeCallData(wallet.owner.address);
        const estimate = () => call(embedded.endpoint, "pm_estimateUserOperationGas", [wireOp(wallet, callData), extraFor(version, mode)]);
        expect((await estimate()).status).to.equal(200); // warms the per-block reads
        const counted: number[] = [];
        while (counted.length < 3 && !counted.includes(1)) {
          const before = await quiet(running);
          const { status, body } = await estimate();
          expect(status, JSON.stringify(body)).to.equal(200);
          counted.push((await ethCalls(running)) - before);
        }
        expect(Math.min(...counted), `${version} ${mode}: eth_calls for one estimate (${counted.join(", ")})`).to.equal(1);
        // The values it answered land when the op is sponsored with them (the signing request decides again).
        const { body } = await estimate();
        const gas = body.data.userOpResponse;
        const extra = Object.fromEntries(["callGasLimit", "verificationGasLimit", "preVerificationGas"].map((f) => [f, `0x${BigInt(gas[f]).toString(16)}`]));
        expect(Object.values(extra).every((v) => BigInt(v) > 0n), JSON.stringify(gas)).to.equal(true);
        await sponsorAndLand(wallet, wireOp(wallet, callData, { extra }), mode);
      }
    }
  });

  it("a deployed sender's or delegated EOA's sponsorship reads no code of its own, gas estimated or the client's: the probe reads the delegate the hash binds, and every op lands", async () => {
    const running = embedded.running;
    const senders = [...(["v0.6", "v0.7", "v0.8"] as const).map((version) => ({ version, kind: "deployed" as const })), { version: "v0.8" as const, kind: "delegated" as const }];
    const clientGas = await clientGasFields(embedded);
    for (const { version, kind } of senders) {
      for (const [mode, gas] of [["sponsor", "estimated"], ["erc20", "estimated"], ["sponsor", "client"], ["user", "client"], ["erc20", "client"]] as const) {
        const { wallet, nonce } = await senderOf(version, kind, mode === "erc20");
        if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        if (mode === "user") await fundTank(running.service.store, wallet.sender, 10n ** 17n, embedded.projectId);
        const label = `${version} ${kind} ${mode}, gas ${gas}`;
        // The fewest of up to three requests counts (the service's periodic reads may fall in a request's window).
        const counted: { calls: number; codeReads: number }[] = [];
        for (let n = nonce; counted.length < 3 && !counted.some((c) => c.calls === 1); n++) {
          const before = { calls: await quiet(running), codeReads: await ethCalls(running, "eth_getCode") };
          const extra = gas === "client" ? clientGas : {};
          await sponsorAndLand(wallet, wireOp(wallet, executeCallData(wallet.owner.address), { deploy: false, nonce: n, extra }), mode).catch((error: Error) => {
            throw new Error(`${label}: ${error.message}`);
          });
          // Landing the op (the bench's handleOps) reads nothing through the service: its counters are the request's.
          counted.push({ calls: (await ethCalls(running)) - before.calls, codeReads: (await ethCalls(running, "eth_getCode")) - before.codeReads });
        }
        expect(Math.min(...counted.map((c) => c.calls)), `${label}: eth_calls (${JSON.stringify(counted)})`).to.equal(1);
        expect(counted.map((c) => c.codeReads), `${label}: eth_getCode per sponsorship`).to.deep.equal(counted.map(() => 0));
      }
    }
  });

  // The delegate memory (src/sponsor/senderDelegates.ts) guesses a delegated EOA's delegate for a signature made
  // before the probe reads the code. An authorization is anyone's claim about any sender: were it remembered, a
  // stranger's request naming another delegate for the victim would make the victim's next data call sign for it,
  // be refused by the probe's simulation (AA34), and sign again: two eth_calls instead of one, at the stranger's will.
  it("a stranger's request naming another delegate in an authorization for a delegated EOA does not cost that EOA's next data call a second eth_call", async () => {
    const running = embedded.running;
    const v08 = embedded.stack.manifest.entryPoints["v0.8"];
    const { wallet, nonce } = await senderOf("v0.8", "delegated", false);
    const clientGas = await clientGasFields(embedded);
    const dataCall = (n: bigint) => sponsorAndLand(wallet, wireOp(wallet, executeCallData(wallet.owner.address), { deploy: false, nonce: n, extra: clientGas }), "sponsor");
    await dataCall(nonce); // the probe reads the victim's code: the memory now holds its real delegate
    const stranger = { ...wallet.authorization!, address: "0x00000000000000000000000000000000000b0a7d" as Address };
    const counted: number[] = [];
    for (let n = nonce + 1n; counted.length < 3 && !counted.includes(1); n++) {
      const claim = { ...wireOp(wallet, executeCallData(wallet.owner.address), { deploy: false, nonce: n }), factory: "0x7702", factoryData: "0x", eip7702Auth: eip7702AuthWire(stranger) };
      const stub = await call(embedded.endpoint, "pm_getPaymasterStubData", [claim, v08.entryPoint, toHex(embedded.stack.chain.chainId), { strategy_code: embedded.strategyCode }]);
      expect(stub.status, JSON.stringify(stub.body)).to.equal(200);
      const before = await quiet(running);
      await dataCall(n);
      counted.push((await ethCalls(running)) - before);
    }
    expect(Math.min(...counted), `eth_calls per data call after a stranger's claim (${JSON.stringify(counted)})`).to.equal(1);
  });

  it("ERC-20 with the client's gas: ONE eth_call too (was the holdings read, then the final simulation); signed for the mode the allowance selects, every op lands", async () => {
    const running = embedded.running;
    // "5 units" must cover less than an op's cost: at the dev chain's first base fee (1 gwei) it does; the blocks
    // the earlier tests mined have lowered the base fee since (empty blocks), so it is set back, and the test waits
    // for the service's market snapshot to see it (the client's fee is checked against it).
    await chainRequest(embedded, "hardhat_setNextBlockBaseFeePerGas", [toHex(10n ** 9n)]);
    await chainRequest(embedded, "hardhat_mine", ["0x1"]);
    const market = running.service.networks.get("local")!.chain!.market;
    await until("the service's snapshot sees the 1 gwei base fee", async () => (await market.current()).baseFeePerGas >= 10n ** 9n);
    for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
      // Charged in postOp (a fresh account approving in its own calls), pre-charged (approved before), and an
      // allowance covering less than the op's cost (charged in postOp, the op approving in full).
      for (const allowance of ["none", "max", "5 units"] as const) {
        const { wallet, nonce, deploy } = allowance === "none" ? await senderOf(version, "fresh", false) : await senderOf(version, "deployed", allowance === "max");
        await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        let next = nonce;
        if (allowance === "5 units") {
          const approveFive = executeCallData(usdc, encodeFunctionData({ abi: erc20Abi as Abi, functionName: "approve", args: [paymasterOf(version, "erc20"), 5n] }));
          await sponsorAndLand(wallet, wireOp(wallet, approveFive, { deploy: false, nonce: next++ }), "sponsor");
        }
        const callData = allowance === "max" ? executeCallData(wallet.owner.address) : approveCallData(usdc, paymasterOf(version, "erc20"));
        const wire = wireOp(wallet, callData, { deploy, nonce: next, extra: await clientGasFields(embedded) });
        // Asked again for the same op until one request shows alone in the count (see above), the last one landed.
        const counted: number[] = [];
        while (counted.length < 3 && !counted.includes(1)) {
          const before = await quiet(running);
          const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor(version, "erc20")]);
          expect(status, JSON.stringify(body)).to.equal(200);
          counted.push((await ethCalls(running)) - before);
        }
        expect(Math.min(...counted), `${version} ${allowance}: eth_calls for one sponsorship (${counted.join(", ")})`).to.equal(1);
        const data = await sponsorAndLand(wallet, wire, "erc20");
        // The signed charge mode: paymasterData's byte after validity (12), token (20) and rate (32).
        const at = (version === "v0.6" ? 20 : 52) + 64;
        const signedMode = parseInt((data.userOpResponse.paymasterAndData as string).slice(2 + at * 2, 4 + at * 2), 16);
        expect(signedMode, `${version} ${allowance}`).to.equal(allowance === "max" ? ChargeMode.PreCharge : ChargeMode.InPostOp);
      }
    }
  });

  it("ERC-20 with the client's gas: the probe's refusals are the final simulation's (no token: TOKEN_BALANCE_INSUFFICIENT; nothing approves the paymaster: TOKEN_ALLOWANCE_INSUFFICIENT)", async () => {
    for (const version of ["v0.6", "v0.7"] as const) {
      const wallet = await newWallet(embedded, version);
      const plain = wireOp(wallet, executeCallData(wallet.owner.address), { extra: await clientGasFields(embedded) });
      const broke = await call(embedded.endpoint, "pm_sponsorUserOperation", [plain, extraFor(version, "erc20")]);
      expect(broke.status, JSON.stringify(broke.body)).to.equal(402);
      expect(broke.body.data.reason).to.equal("TOKEN_BALANCE_INSUFFICIENT");
      await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
      const unapproved = await call(embedded.endpoint, "pm_sponsorUserOperation", [plain, extraFor(version, "erc20")]);
      expect(unapproved.status, JSON.stringify(unapproved.body)).to.equal(402);
      expect(unapproved.body.data.reason).to.equal("TOKEN_ALLOWANCE_INSUFFICIENT");
      const reader = openSponsorshipReader(embedded);
      expect(reader.count(wallet.sender), "a refused op leaves no record").to.equal(0);
      reader.close();
    }
  });

  it("never signs what would fail on chain: a seeded random mix of ops in every mode and version, every one lands", async () => {
    const seed = 45;
    const random = prng(seed);
    const counts = await oneCallCounts(embedded.running);
    const expectedFallbacks: Record<string, number> = {};
    // Every kind of sender in every version and mode, in a seeded random order; in ERC-20 mode a deployed sender
    // has approved the paymaster (pre-charged) or not (approving in the op itself, charged in postOp), and a
    // pre-charged op may spend the sender's tokens itself.
    const kinds = { "v0.6": ["fresh", "deployed"], "v0.7": ["fresh", "deployed"], "v0.8": ["fresh", "deployed", "7702", "delegated"] } as const;
    const draws = (["v0.6", "v0.7", "v0.8"] as const).flatMap((version) => kinds[version].flatMap((kind) => (["sponsor", "erc20", "user"] as const).map((mode) => ({ version, kind, mode, order: random() }))));
    draws.sort((a, b) => a.order - b.order);
    const cases: string[] = [];
    for (const [i, { version, kind, mode }] of draws.entries()) {
      const approved = mode === "erc20" && (kind === "deployed" || kind === "delegated") && random() < 0.75;
      const spends = approved && random() < 0.5;
      const label = `case ${i} (seed ${seed}): ${version} ${mode} ${kind}${mode === "erc20" ? (approved ? " approved" : " approving in its calls") : ""}${spends ? ", spending tokens" : ""}`;
      cases.push(label);
      const { wallet, nonce, deploy } = await senderOf(version, kind, approved);
      if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
      if (mode === "user") await fundTank(embedded.running.service.store, wallet.sender, 10n ** 17n, embedded.projectId);
      // A pre-charged op that spends nothing still does some work of its own (it lets another address spend 1 unit,
      // a fresh storage slot): the estimate must measure it whatever the pre-charge's refund costs postOp.
      const callData = !approved
        ? mode === "erc20"
          ? approveCallData(usdc, paymasterOf(version, "erc20"))
          : executeCallData(wallet.owner.address)
        : spends
          ? transferCallData(usdc, embedded.stack.chain.accounts[1]!.address, 10n ** 6n)
          : executeCallData(usdc, encodeFunctionData({ abi: erc20Abi as Abi, functionName: "approve", args: [embedded.stack.chain.accounts[2]!.address, 1n] }));
      const inCase = await oneCallCounts(embedded.running);
      await sponsorAndLand(wallet, wireOp(wallet, callData, { deploy, nonce }), mode).catch((error: Error) => {
        throw new Error(`${label}: ${error.message}`);
      });
      const after = await oneCallCounts(embedded.running);
      const took = { ...delta(after.oneCall, inCase.oneCall), ...delta(after.fallbacks, inCase.fallbacks) };
      // Only an op that moves the sender's pre-charged tokens itself needs a simulation of its own.
      const expected = spends ? `erc20 ${version} token_state` : `${mode} ${version}`;
      expect(took, label).to.deep.equal({ [expected]: 1 });
      if (spends) expectedFallbacks[expected] = (expectedFallbacks[expected] ?? 0) + 1;
    }
    const after = await oneCallCounts(embedded.running);
    expect(delta(after.fallbacks, counts.fallbacks), `fallbacks of the mix: ${cases.join("; ")}`).to.deep.equal(expectedFallbacks);
    // ERC-20 with and without an allowance, and an op spending its pre-charged tokens.
    for (const word of ["approved", "approving", "spending"]) {
      expect(cases.some((c) => c.includes(` ${word}`)), `the mix has a ${word} case: ${cases.join("; ")}`).to.equal(true);
    }
  });

  it("the signed op's validation costs, to the gas, what the probe's did (+9 for the accepted signature): our paymasters take the same path whatever the signature, limits, fees and amounts, and the probe's reads warm nothing", async () => {
    const network = embedded.running.service.networks.get("local")!.chain!;
    for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
      for (const kind of ["verifying", "erc20 postOp", "erc20 pre-charge"] as const) {
        const mode: SponsorMode = kind === "verifying" ? "sponsor" : "erc20";
        const { wallet, nonce, deploy } = await senderOf(version, kind === "erc20 pre-charge" ? "deployed" : "fresh", kind === "erc20 pre-charge");
        if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        const callData = kind === "erc20 postOp" ? approveCallData(usdc, paymasterOf(version, "erc20")) : executeCallData(wallet.owner.address);
        const wire = wireOp(wallet, callData, { deploy, nonce });
        const { body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor(version, mode)]);
        const signed = opFromResponse(wallet, wire, body.data) as SimulatedOp;
        const signedWithStub = { ...signed, userOp: { ...signed.userOp, signature: STUB_SIGNATURE } } as SimulatedOp;
        const probe = probeOf(signedWithStub);
        const entryPoint = embedded.stack.manifest.entryPoints[version].entryPoint;
        // The probe's one call as the service makes it (its own variant, the ERC-20 holdings read before), its op P.
        const run = { op: probe, variant: probe };
        const input = {
          entryPoint,
          paymaster: paymasterOf(version, mode),
          signer: network.signer.address,
          sender: wallet.sender,
          callData,
          run,
          ...(mode === "erc20" ? { erc20: { token: usdc, preChargeFrom: 1n, preCharge: run } } : {}),
        };
        const [asSigned, probed, wholeCode] = await Promise.all([
          simulateOp(network.rpc, network.simulator, entryPoint, signedWithStub),
          probeSponsorship(network.rpc, network.simulator, network.probe, input),
          probeSponsorship(network.rpc, network.simulator, PROBE_CODE_OVERRIDE, input),
        ]);
        // The local stack deploys SponsorProbe: the service reaches it through a small proxy, which answers as its whole code does.
        expect(network.probe.kind).to.equal("deployed");
        expect(JSON.stringify(wholeCode, (_, v) => (typeof v === "bigint" ? v.toString() : v))).to.equal(JSON.stringify(probed, (_, v) => (typeof v === "bigint" ? v.toString() : v)));
        const asProbed = probed.simulation;
        expect(asSigned.ok && asProbed.ok, `${version} ${kind}: both validate`).to.equal(true);
        if (!asSigned.ok || !asProbed.ok) continue;
        expect(probed.preCharge, `${version} ${kind}: the charge mode the allowance selects`).to.equal(kind === "erc20 pre-charge");
        // The same preVerificationGas: preOpGas is the validation's gas plus it. What the probe read before its
        // simulation must not have warmed anything for it (the paymaster, the token's slots).
        const accepted = asSigned.result.preOpGas - asProbed.result.preOpGas;
        expect(Number(accepted), `${version} ${kind}: our signature's branch costs at most ACCEPTED_SIGNATURE_GAS more`).to.be.within(0, Number(ACCEPTED_SIGNATURE_GAS));
        expect(accepted, `${version} ${kind}: measured`).to.equal(9n);
        if (version !== "v0.6") {
          expect(asSigned.result.paymasterSigFailed, "our signature").to.equal(false);
          expect(asProbed.result.paymasterSigFailed, "the stub signature fails, without a revert").to.equal(true);
        }
      }
    }
  });

  /**
   * A probe-like op for a signed op: generous limits (a million more each) at a 1-wei price, the stub signature in
   * the paymaster data and (ERC-20) a charge cap of two units; the paymaster's own limits unchanged.
   */
  function probeOf(signed: SimulatedOp): SimulatedOp {
    const u = signed.userOp;
    const gas = { callGasLimit: u.callGasLimit + 1_000_000n, verificationGasLimit: u.verificationGasLimit + 1_000_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n };
    const stubbed = (data: Hex): Hex => {
      const body = data.slice(0, data.length - 130);
      // ERC-20 paymasterData: validity (12) | token (20) | rate (32) | mode (1) | maxTokenCharge (32) | signature (65).
      const erc20 = (body.length - 2) / 2 === 85 + 12;
      const capped = erc20 ? `${body.slice(0, body.length - 64)}${(2n).toString(16).padStart(64, "0")}` : body;
      return `${capped}${STUB_SIGNATURE.slice(2)}` as Hex;
    };
    if (signed.version === "v0.6") {
      const pmd = signed.userOp.paymasterAndData;
      return { version: "v0.6", userOp: { ...signed.userOp, ...gas, paymasterAndData: `${pmd.slice(0, 42)}${stubbed(`0x${pmd.slice(42)}`).slice(2)}` as Hex } };
    }
    return { ...signed, userOp: { ...signed.userOp, ...gas, paymasterData: stubbed(signed.userOp.paymasterData!) } } as SimulatedOp;
  }

  describe("each fallback: the signed op is simulated, counted by reason, and lands (or is refused as before)", () => {
    it("account: an account whose validation reads the paymaster data it signs, deployed or deployed by the op", async () => {
      const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
      const deployer = embedded.stack.chain.accounts[0]!.address;
      const deploy = async (bytecode: Hex) => {
        const data = `${bytecode}${encodeAbiParameters([{ type: "address" }], [entryPoint]).slice(2)}` as Hex;
        const hash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from: deployer, data, gas: "0x989680" }]);
        return (await chainRequest<{ contractAddress: Address }>(embedded, "eth_getTransactionReceipt", [hash])).contractAddress;
      };
      const factory = await deploy(PaymasterDataAccountFactoryArtifact.bytecode);
      const factoryAbi = PaymasterDataAccountFactoryArtifact.abi as Abi;
      const fresh = await chainRequest<Hex>(embedded, "eth_call", [{ to: factory, data: encodeFunctionData({ abi: factoryAbi, functionName: "getAddress", args: [7n] }) }, "latest"]);
      const wallets: Wallet[] = [
        { ...(await newWallet(embedded, "v0.7")), sender: await deploy(PaymasterDataAccountArtifact.bytecode), initCode: "0x" },
        { ...(await newWallet(embedded, "v0.7")), sender: `0x${fresh.slice(-40)}` as Address, initCode: `${factory}${encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [7n] }).slice(2)}` as Hex },
      ];
      for (const wallet of wallets) {
        const before = await oneCallCounts(embedded.running);
        const wire = wireOp(wallet, executeCallData(deployer), { deploy: wallet.initCode !== "0x" });
        const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, extraFor("v0.7", "sponsor")]);
        expect(status, JSON.stringify(body)).to.equal(200);
        expect(delta((await oneCallCounts(embedded.running)).fallbacks, before.fallbacks), wallet.initCode).to.deep.equal({ "sponsor v0.7 account": 1 });
        // The account takes every op unsigned.
        const outcome = await handleOps(embedded, opFromResponse(wallet, wire, body.data));
        expect(outcome.reverted, outcome.failedOp).to.equal(false);
        expect(outcome.event?.success).to.equal(true);
      }
    });

    it("charge_mode: an allowance that covers the estimate's one-unit pre-charge but not the op's cost: signed for postOp charge, which the op's own approval pays", async () => {
      for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
        const { wallet, nonce } = await senderOf(version, "deployed", false);
        await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        // A 5-unit allowance first (an op of its own), then the op that approves the paymaster in full.
        const approveFive = executeCallData(usdc, encodeFunctionData({ abi: erc20Abi as Abi, functionName: "approve", args: [paymasterOf(version, "erc20"), 5n] }));
        await sponsorAndLand(wallet, wireOp(wallet, approveFive, { deploy: false, nonce }), "sponsor");
        const before = await oneCallCounts(embedded.running);
        await sponsorAndLand(wallet, wireOp(wallet, approveCallData(usdc, paymasterOf(version, "erc20")), { deploy: false, nonce: nonce + 1n }), "erc20");
        expect(delta((await oneCallCounts(embedded.running)).fallbacks, before.fallbacks)).to.deep.equal({ [`erc20 ${version} charge_mode`]: 1 });
      }
    });

    it("signer: a paymaster that no longer accepts the service's signer: the final simulation refuses it (AA34), as before", async () => {
      const paymaster = embedded.stack.manifest.entryPoints["v0.7"].verifyingPaymaster;
      const owner = embedded.stack.owner.address;
      const signer = embedded.running.service.networks.get("local")!.chain!.signer.address;
      const setSigner = (fn: "removeSigner" | "addSigner") =>
        chainRequest(embedded, "eth_sendTransaction", [{ from: owner, to: paymaster, data: encodeFunctionData({ abi: [{ type: "function", name: fn, inputs: [{ type: "address" }], outputs: [], stateMutability: "nonpayable" }], functionName: fn, args: [signer] }) }]);
      await setSigner("removeSigner");
      try {
        const wallet = await newWallet(embedded, "v0.7");
        const before = await oneCallCounts(embedded.running);
        const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), extraFor("v0.7", "sponsor")]);
        expect(status, JSON.stringify(body)).to.equal(422);
        expect(body.data).to.include({ reason: "SIMULATION_FAILED", aaCode: "AA34" });
        expect(delta((await oneCallCounts(embedded.running)).fallbacks, before.fallbacks)).to.deep.equal({ "sponsor v0.7 signer": 1 });
      } finally {
        await setSigner("addSigner");
      }
    });

    it("execution: v0.6 calls that revert are refused by the final simulation with their revert data, as before", async () => {
      const wallet = await newWallet(embedded, "v0.6");
      const before = await oneCallCounts(embedded.running);
      // The account sends the USDC it does not have: the token reverts.
      const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(wallet, transferCallData(usdc, wallet.owner.address, 1n)), extraFor("v0.6", "sponsor")]);
      expect(status, JSON.stringify(body)).to.equal(422);
      expect(body.data.reason).to.equal("EXECUTION_REVERTED");
      expect(body.data.revertData).to.match(/^0x[0-9a-f]{8,}/);
      expect(delta((await oneCallCounts(embedded.running)).fallbacks, before.fallbacks)).to.deep.equal({ "sponsor v0.6 execution": 1 });
    });

    it("probe_unavailable: a node that takes no state overrides (v0.6 simulates without one): plain calls, the ops land, one warning", async () => {
      await behindFront({}, "v0.6", async ({ front, running, logs }) => {
        const { v1: endpoint } = await projectEndpoints(running.service.store, running.url, "no overrides", "NOOVERRIDE");
        // First an ERC-20 op with the client's gas (its probe refused: the holdings read, then the final
        // simulation), then ops whose gas the service estimates: refused PROBE_REFUSALS_IN_A_ROW times in a row,
        // the probe is not asked again.
        for (const [mode, clientGas] of [["erc20", true], ["sponsor", false], ["erc20", false], ["sponsor", false]] as const) {
          const wallet = await newWallet(embedded, "v0.6");
          if (mode === "erc20") await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
          const calls = mode === "erc20" ? approveCallData(usdc, paymasterOf("v0.6", "erc20")) : executeCallData(wallet.owner.address);
          const wire = wireOp(wallet, calls, clientGas ? { extra: await clientGasFields(embedded) } : {});
          const extra = mode === "sponsor" ? { strategy_code: "NOOVERRIDE" } : { token: "USDC" };
          const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, extra]);
          expect(status, JSON.stringify(body)).to.equal(200);
          const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
          expect(outcome.reverted, outcome.failedOp).to.equal(false);
        }
        const counts = await oneCallCounts(running);
        expect(Object.fromEntries(counts.fallbacks)).to.deep.equal({ "sponsor v0.6 probe_unavailable": 2, "erc20 v0.6 probe_unavailable": 1 });
        expect(front.refused, "the probe was asked until refused 3 times in a row, then left alone").to.equal(PROBE_REFUSALS_IN_A_ROW);
        expect(probeWarnings(logs)).to.have.length(1);
      });
    });

    it("a burst of sponsorships on a node without state overrides: the refusals of probes in flight when it went off make one warning, not one each", async () => {
      await behindFront({}, "v0.6", async ({ front, running, logs }) => {
        const { v1: endpoint } = await projectEndpoints(running.service.store, running.url, "burst", "BURST");
        const wallets = [];
        for (let i = 0; i < 8; i++) wallets.push(await newWallet(embedded, "v0.6"));
        const answers = await Promise.all(wallets.map((wallet) => call(endpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "BURST" }])));
        expect(answers.map((a) => a.status)).to.deep.equal(wallets.map(() => 200));
        expect(front.refused, "every probe of the burst was in flight before the first refusal came back").to.be.greaterThan(PROBE_REFUSALS_IN_A_ROW);
        expect(probeWarnings(logs)).to.have.length(1);
      });
    });

    it("errors in passing on the probe (the node's EVM timing out) cost the requests that met them their one call: two, an answer, two more never switch it off, no warning", async () => {
      // The probe's calls 1, 2, 4 and 5 refused: never 3 in a row, as the count starts again at an answer.
      await behindFront({ refuses: (kind, n) => kind === "probe" && [1, 2, 4, 5].includes(n), error: { code: -32000, message: "execution aborted (timeout = 5s)" } }, "v0.7", async ({ front, running, logs }) => {
        const { v1: endpoint } = await projectEndpoints(running.service.store, running.url, "passing errors", "PASSING");
        // A fresh v0.7 account's sponsorship: its probe (the estimate), then, when that was refused, the plain
        // estimate and the final simulation, which asks no probe (nothing for it to fold in).
        const sponsorAndLandHere = async () => {
          const wallet = await newWallet(embedded, "v0.7");
          const wire = wireOp(wallet, executeCallData(wallet.owner.address));
          const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, { version: "v0.7", strategy_code: "PASSING" }]);
          expect(status, JSON.stringify(body)).to.equal(200);
          const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
          expect(outcome.reverted, outcome.failedOp).to.equal(false);
        };
        for (let i = 0; i < 6; i++) await sponsorAndLandHere();
        const counts = await oneCallCounts(running);
        expect(Object.fromEntries(counts.fallbacks), "the four that met an error").to.deep.equal({ "sponsor v0.7 probe_unavailable": 4 });
        expect(Object.fromEntries(counts.oneCall), "the others, decided by their probe").to.deep.equal({ "sponsor v0.7": 2 });
        expect([front.probeCalls, front.refused], "every request asked the probe").to.deep.equal([6, 4]);
        expect(probeWarnings(logs)).to.deep.equal([]);
      });
    });

    it("a node that ignores state overrides (answers the probe's call as a call to an empty address): the probe counts as refused, never a 500; v0.6 ops land", async () => {
      await behindFront({ ignore: true }, "v0.6", async ({ front, running, logs }) => {
        const { v1: endpoint } = await projectEndpoints(running.service.store, running.url, "overrides ignored", "IGNORED");
        for (let i = 0; i <= PROBE_REFUSALS_IN_A_ROW; i++) {
          const wallet = await newWallet(embedded, "v0.6");
          const wire = wireOp(wallet, executeCallData(wallet.owner.address));
          const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "IGNORED" }]);
          expect(status, JSON.stringify(body)).to.equal(200);
          const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
          expect(outcome.reverted, outcome.failedOp).to.equal(false);
        }
        expect(Object.fromEntries((await oneCallCounts(running)).fallbacks)).to.deep.equal({ "sponsor v0.6 probe_unavailable": PROBE_REFUSALS_IN_A_ROW + 1 });
        expect(front.probeCalls, "asked until refused 3 times in a row (the estimate's, then the landing's), then left alone").to.equal(PROBE_REFUSALS_IN_A_ROW);
        expect(probeWarnings(logs)).to.have.length(1);
      });
    });

    it("a v0.7 or v0.8 network on a node without state overrides (refusing or ignoring them): the service does not start, and says why", async () => {
      for (const ignore of [false, true]) {
        const front = await startOverrideRefusingFront(embedded.stack.chain.url, { ignore });
        try {
          for (const version of ["v0.7", "v0.8"] as const) {
            let started: Awaited<ReturnType<typeof serviceBehind>> | undefined;
            let refusal: unknown;
            try {
              started = await serviceBehind(front, version);
            } catch (error) {
              refusal = error;
            }
            await started?.running.close();
            expect(refusal, `${version}, ${ignore ? "ignored" : "refused"}`).to.be.instanceOf(Error);
            expect((refusal as Error).message).to.match(new RegExp(`network local: the RPC endpoint does not take eth_call state overrides \\(it ${ignore ? "ignored the override \\(the call answered 0 bytes, not 96\\)" : "refused the call with an override: too many arguments"}.*EntryPoint ${version} simulations need`));
          }
        } finally {
          await front.close();
        }
      }
    });

    it("an error in passing on the start-up's override check is no verdict: the network is not ready, then ready at the next try, and sponsors", async () => {
      await behindFront({ refuses: (kind, n) => kind === "check" && n === 1, error: { code: -32000, message: "execution aborted (timeout = 5s)" } }, "v0.7", async ({ running, logs }) => {
        const ready = async () => (await fetch(`${running.url}/ready`)).status === 200;
        expect(await ready(), "not ready after the error").to.equal(false);
        let waited = 0;
        while (!(await ready()) && waited < 10_000) waited += await new Promise<number>((resolve) => setTimeout(() => resolve(100), 100));
        expect(await ready(), "ready at the next try").to.equal(true);
        const wallet = await newWallet(embedded, "v0.7");
        const wire = wireOp(wallet, executeCallData(wallet.owner.address));
        const { v1: endpoint } = await projectEndpoints(running.service.store, running.url, "start-up error", "STARTUP");
        const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, { version: "v0.7", strategy_code: "STARTUP" }]);
        expect(status, JSON.stringify(body)).to.equal(200);
        expect(logs.filter((l) => l.msg === "network not ready: its RPC does not answer; retrying until it does").map((l) => l.problem)).to.deep.equal(["the RPC does not answer (execution aborted (timeout = 5s))"]);
      });
    });
  });

  it("the verdict: a non-canonical EntryPoint or a window the paymaster refuses always falls back (pure)", () => {
    const findings = { signerAccepted: true, accountAgnostic: true, executionSucceeded: true, preCharge: false };
    const base: OneCallInput = { version: "v0.7", entryPoint: embedded.stack.manifest.entryPoints["v0.7"].entryPoint, window: { validAfter: 1_000, validUntil: 1_360 }, findings, token: null };
    expect(oneCallVerdict(base)).to.deep.equal({ oneCall: true });
    expect(oneCallVerdict({ ...base, entryPoint: "0x1111111111111111111111111111111111111111" })).to.deep.equal({ oneCall: false, reason: "entry_point" });
    expect(oneCallVerdict({ ...base, window: { validAfter: 1_000, validUntil: 1_000 + 86_401 } })).to.deep.equal({ oneCall: false, reason: "window" });
    expect(oneCallVerdict({ ...base, window: { validAfter: 0, validUntil: 0 } })).to.deep.equal({ oneCall: false, reason: "window" });
    expect(oneCallVerdict({ ...base, findings: undefined })).to.deep.equal({ oneCall: false, reason: "probe_unavailable" });
    // ERC-20 pre-charge: the holdings after the probe must show its one unit and nothing else.
    const before = { balance: 100n, allowance: maxUint256, paymasterBalance: 7n };
    const erc20 = { ...base, token: { chargeMode: ChargeMode.PreCharge, maxTokenCost: 60n }, findings: { ...findings, preCharge: true } };
    expect(oneCallVerdict({ ...erc20, findings: { ...erc20.findings, holdings: { before, after: { balance: 99n, allowance: maxUint256, paymasterBalance: 8n } } } })).to.deep.equal({ oneCall: true });
    expect(oneCallVerdict({ ...erc20, findings: { ...erc20.findings, holdings: { before, after: { balance: 89n, allowance: maxUint256, paymasterBalance: 8n } } } })).to.deep.equal({ oneCall: false, reason: "token_state" });
    // PostOp charge: what the op left the sender (plus the probe's unit) must cover the cost.
    const postOp = { ...base, token: { chargeMode: ChargeMode.InPostOp, maxTokenCost: 60n }, findings: { ...findings, preCharge: false } };
    const left = (allowance: bigint) => ({ ...postOp, findings: { ...postOp.findings, holdings: { before: { balance: 100n, allowance: 0n, paymasterBalance: 7n }, after: { balance: 99n, allowance, paymasterBalance: 8n } } } });
    expect(oneCallVerdict(left(59n))).to.deep.equal({ oneCall: true });
    expect(oneCallVerdict(left(58n))).to.deep.equal({ oneCall: false, reason: "token_state" });
    expect(oneCallVerdict({ ...postOp, findings: { ...postOp.findings, preCharge: true } })).to.deep.equal({ oneCall: false, reason: "charge_mode" });
  });
});

/** An RPC front on 127.0.0.1 that refuses any eth_call carrying a state override, as a node without them does; `refused`: how many. */
/** What an eth_call with a state override is, to the front: the sponsorship probe, the start-up's check that overrides work, or another (a simulation). */
type OverrideCall = "probe" | "check" | "other";
const PROBE_CALL = toFunctionSelector(getAbiItem({ abi: SponsorProbeArtifact.abi as Abi, name: "probe" }) as AbiFunction);
const HOLDINGS_CALL = toFunctionSelector(getAbiItem({ abi: SponsorProbeArtifact.abi as Abi, name: "holdings" }) as AbiFunction);

/**
 * A front to the chain that answers eth_calls with a state override (a third parameter) with a JSON-RPC error, as a
 * node without state overrides does; with `refuses`, only the calls it names (by kind, and the call's 1-based count
 * among its kind), with `error`'s body, every other call forwarded: errors in passing. `ignore`: refuses nothing and
 * forwards such calls without their overrides, as a node that ignores the parameter answers.
 */
async function startOverrideRefusingFront(
  chainUrl: string,
  {
    refuses,
    error = { code: -32602, message: "too many arguments, want at most 2" },
    ignore = false,
  }: { refuses?: (kind: OverrideCall, n: number) => boolean; error?: { code: number; message: string }; ignore?: boolean } = {},
): Promise<{ url: string; readonly refused: number; readonly probeCalls: number; close(): Promise<void> }> {
  const target = new URL(chainUrl);
  let refused = 0;
  const counts: Record<OverrideCall, number> = { probe: 0, check: 0, other: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const parsed = JSON.parse(body.toString("utf8")) as { id: unknown; method: string; params?: unknown[] };
      const overrides = parsed.method === "eth_call" && (parsed.params?.length ?? 0) > 2;
      const { to, data } = (parsed.params?.[0] ?? {}) as { to?: string; data?: string };
      const kind: OverrideCall = to?.toLowerCase() !== PROBE_ADDRESS.toLowerCase() ? "other" : data?.startsWith(PROBE_CALL) ? "probe" : data?.startsWith(HOLDINGS_CALL) ? "check" : "other";
      if (overrides) counts[kind]++;
      if (overrides && !ignore && (refuses === undefined || refuses(kind, counts[kind]))) {
        refused++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: parsed.id, error }));
        return;
      }
      const sent = overrides && ignore ? Buffer.from(JSON.stringify({ ...parsed, params: parsed.params!.slice(0, 2) })) : body;
      const upstream = request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": sent.length } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, { "content-type": "application/json" });
        answer.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      upstream.end(sent);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get refused() {
      return refused;
    },
    get probeCalls() {
      return counts.probe;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
