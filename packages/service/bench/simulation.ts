/**
 * What one simulation costs the chain node, option by option, for the same v0.7 op (a fresh SimpleAccount
 * deployed by the op, Sponsor mode paymaster data): the numbers behind "Simulation" in the README.
 *
 *   pnpm --filter @paymaster/service bench:simulation -- [--calls 200]
 *
 * Options, alternated call by call on the same chain process (Hardhat EDR):
 *   - whole code: simulateHandleOp with EntryPointSimulatorV07's whole runtime code as the state override;
 *   - proxy: a 45-byte delegating override to the simulator deployed once on the chain (what the service uses);
 *   - handleOps: a plain handleOps eth_call of the op signed by its owner (no override; a bundler's check);
 *   - handleOps + 1-byte override: the same with a 1-byte code override elsewhere (what an override costs alone);
 *   - sponsorship probe: the estimate's one call (src/chain/probe.ts) for the op with the estimate's values, as the
 *     service sends it, without its account check, and with the probe's whole code as the override.
 * Prints the client-side p50 latency and the chain process's CPU per call.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { encodeFunctionData, type Abi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EntryPointV07Artifact, SimpleAccountFactoryV07Artifact } from "@paymaster/contracts/artifacts";
import { readManifest } from "@paymaster/contracts/manifest";
import { STUB_SIGNATURE, encodeVerifyingPaymasterData, getUserOpHash, packUserOpV07, verifyingPaymasterHash, type Address, type Hex, type UserOperationV07 } from "@paymaster/shared";
import { createChainRpc } from "../src/chain/rpc.ts";
import { SIMULATOR_CODE_OVERRIDE, SIMULATOR_V08_CODE_OVERRIDE, findSimulatorV07, simulateOp, type Simulator, type SimulatorV07 } from "../src/chain/entryPoint.ts";
import { PROBE_CODE_OVERRIDE, findProbe, probeSponsorship } from "../src/chain/probe.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { encodeSimulateHandleOp } from "../src/chain/userOpAbi.ts";
import { createSigner } from "../src/signer/signer.ts";
import { cpuSecondsOf, startChainProcess } from "./chainProcess.ts";

const { values } = parseArgs({ args: process.argv.slice(2).filter((a) => a !== "--"), options: { calls: { type: "string", default: "200" } } });
const calls = Math.max(20, Math.min(2000, Number(values.calls)));
const ZERO = "0x0000000000000000000000000000000000000000" as Address;

const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-bench-")), "data");
const chain = await startChainProcess(path.join(dataDir, "manifest.json"));
try {
  const manifest = await readManifest(path.join(dataDir, "manifest.json"));
  const entry = manifest.entryPoints["v0.7"];
  const rpc = createChainRpc(chain.url);
  const accounts = await rpc.request<Address[]>("eth_accounts", []);

  // One op, signed for real by the paymaster signer and by the account owner, so handleOps accepts it.
  const ownerKey = generatePrivateKey();
  const owner = privateKeyToAccount(ownerKey);
  const factoryAbi = SimpleAccountFactoryV07Artifact.abi as Abi;
  const word = await rpc.request<Hex>("eth_call", [{ to: entry.simpleAccountFactory, data: encodeFunctionData({ abi: factoryAbi, functionName: "getAddress", args: [owner.address, 0n] }) }, "latest"]);
  const block = await rpc.request<{ baseFeePerGas: string; timestamp: string }>("eth_getBlockByNumber", ["latest", false]);
  const now = Number(BigInt(block.timestamp));
  const window = { validUntil: now + 3600, validAfter: now - 60 };
  let op: UserOperationV07 = {
    sender: `0x${word.slice(-40)}` as Address,
    nonce: 0n,
    factory: entry.simpleAccountFactory,
    factoryData: encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, 0n] }),
    callData: executeCallData(owner.address),
    callGasLimit: 40_000n,
    verificationGasLimit: 400_000n,
    preVerificationGas: 60_000n,
    maxFeePerGas: BigInt(block.baseFeePerGas) * 3n + 10n ** 9n,
    maxPriorityFeePerGas: 10n ** 9n,
    paymaster: entry.verifyingPaymaster,
    paymasterVerificationGasLimit: 50_000n,
    paymasterPostOpGasLimit: 0n,
    paymasterData: "0x",
    signature: "0x",
  };
  const paymasterSigner = createSigner(chain.signerKey);
  const pmHash = verifyingPaymasterHash({ version: "v0.7", userOp: op, chainId: 31337, paymaster: entry.verifyingPaymaster, ...window, eip7702Delegate: undefined } as Parameters<typeof verifyingPaymasterHash>[0]);
  op = { ...op, paymasterData: encodeVerifyingPaymasterData(window, await paymasterSigner.signHash(pmHash)) };
  const userOpHash = getUserOpHash({ version: "v0.7", userOp: op, entryPoint: entry.entryPoint, chainId: 31337 } as Parameters<typeof getUserOpHash>[0]);
  op = { ...op, signature: await createSigner(ownerKey).signHash(userOpHash) };
  const handleOps = encodeFunctionData({ abi: EntryPointV07Artifact.abi as Abi, functionName: "handleOps", args: [[packUserOpV07(op)], accounts[10]!] });

  const proxy: SimulatorV07 = await findSimulatorV07(rpc);
  if (proxy.kind !== "deployed") throw new Error("the simulator is not deployed on the local chain");
  // The estimate's op: generous limits at a 1-wei price, the stub signature in the paymaster data.
  const estimateOp = { ...op, callGasLimit: 5_000_000n, verificationGasLimit: 1_000_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, paymasterData: encodeVerifyingPaymasterData(window, STUB_SIGNATURE), signature: STUB_SIGNATURE };
  const variantOp = { ...estimateOp, verificationGasLimit: 1_000_001n, callGasLimit: 5_000_001n, maxFeePerGas: 2n };
  const probeOf = (code: Simulator, check: boolean) => async () => {
    const run = { op: { version: "v0.7" as const, userOp: estimateOp }, ...(check ? { variant: { version: "v0.7" as const, userOp: variantOp } } : {}) };
    const input = { entryPoint: entry.entryPoint, paymaster: entry.verifyingPaymaster, signer: paymasterSigner.address, sender: op.sender, callData: op.callData, run };
    const result = await probeSponsorship(rpc, { "v0.7": proxy, "v0.8": SIMULATOR_V08_CODE_OVERRIDE }, code, input);
    if (!result.simulation.ok || (check && !result.variant?.ok)) throw new Error("the probe failed");
  };
  const simulate = (simulator: SimulatorV07) => async () => {
    const outcome = await simulateOp(rpc, { "v0.7": simulator, "v0.8": SIMULATOR_V08_CODE_OVERRIDE }, entry.entryPoint, { version: "v0.7", userOp: op });
    if (!outcome.ok || outcome.result.opSucceeded !== true) throw new Error(`simulation failed: ${JSON.stringify(outcome, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
  };
  const options: [string, () => Promise<unknown>][] = [
    ["simulateHandleOp, whole code override (~19 kB)", simulate(SIMULATOR_CODE_OVERRIDE)],
    ["simulateHandleOp, 45-byte proxy override", simulate(proxy)],
    ["handleOps eth_call (signed op, no override)", () => rpc.request("eth_call", [{ from: accounts[9], to: entry.entryPoint, data: handleOps }, "latest"])],
    ["handleOps eth_call + 1-byte override", () => rpc.request("eth_call", [{ from: accounts[9], to: entry.entryPoint, data: handleOps }, "latest", { "0x000000000000000000000000000000000000dEaD": { code: "0x00" } }])],
    // What the outcome hop costs: simulateHandleOp with no target call (the op's outcome is not learnt).
    ["simulateHandleOp via proxy, no target call", () => rpc.request("eth_call", [{ to: entry.entryPoint, data: encodeSimulateHandleOp({ version: "v0.7", userOp: op }, ZERO, "0x") }, "latest", { [entry.entryPoint]: { code: proxy.code } }])],
    // The estimate's one call (src/chain/probe.ts): its op, with and without the account check, and with the
    // probe's whole code as the override instead of a proxy to its deployment.
    ["sponsorship probe, what the service sends", probeOf(await findProbe(rpc), true)],
    ["sponsorship probe, without the account check", probeOf(await findProbe(rpc), false)],
    ["sponsorship probe, whole code override (~3.7 kB)", probeOf(PROBE_CODE_OVERRIDE, true)],
  ];
  const latencies = options.map(() => [] as number[]);
  const cpu = options.map(() => 0);
  for (const [, run] of options) await run(); // warm-up
  for (let i = 0; i < calls; i++) {
    for (const [index, [, run]] of options.entries()) {
      const before = cpuSecondsOf(chain.pid);
      const started = performance.now();
      await run();
      latencies[index]!.push(performance.now() - started);
      cpu[index]! += cpuSecondsOf(chain.pid) - before;
    }
  }
  const p50 = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  console.log(`one v0.7 op (fresh account deployed by the op), ${calls} calls per option, alternated; chain: Hardhat EDR in its own process`);
  console.log(`${"option".padEnd(50)} ${"p50 latency".padStart(12)} ${"chain CPU/call".padStart(15)}`);
  for (const [index, [name]] of options.entries()) {
    console.log(`${name.padEnd(50)} ${`${p50(latencies[index]!).toFixed(2)} ms`.padStart(12)} ${`${((cpu[index]! * 1000) / calls).toFixed(2)} ms`.padStart(15)}`);
  }
} finally {
  chain.stop();
}
