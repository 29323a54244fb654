/**
 * The sponsor pipeline, shared by pm_sponsorUserOperation and pm_getPaymasterData (reserve + sign),
 * pm_estimateUserOperationGas (neither) and pm_getPaymasterStubData (policy only):
 *   mode -> policy -> gas (fill missing fields, fees from the chain) -> price (ERC-20) -> [estimate: one
 *   simulation when the client left gas out] -> sign -> [the final simulation: ONE run of the op as it will
 *   land] -> reserve the maximum cost and record the signature (ONE store transaction) -> answer with a
 *   5-minute window.
 * The stub runs no simulation (policy, caps and the paymasters' constant gas limits). The signature is made
 * before the final simulation so that the simulation runs our real paymaster data; it leaves the service only
 * after the simulation passed and the reservation (recorded already signed) holds.
 */
import { encodeFunctionData, decodeFunctionResult, erc20Abi, type Abi } from "viem";
import {
  ChargeMode,
  PAYMASTER_VERIFICATION_GAS,
  STUB_MAX_TOKEN_CHARGE,
  STUB_SIGNATURE,
  encodeErc20PaymasterData,
  encodePaymasterAndDataV06,
  encodePaymasterAndDataV07,
  encodeVerifyingPaymasterData,
  erc20PaymasterHash,
  getPackedUserOpHashV07,
  getPackedUserOpHashV08,
  getUserOpHashV06,
  maxGasCostV06,
  maxGasCostV07,
  packUserOpV07,
  preChargeGasCostV06,
  preChargeGasCostV07,
  tokenCost,
  verifyingPaymasterHash,
  type Address,
  type EntryPointVersion,
  type Hex,
  type UserOperationV06,
  type UserOperationV08,
} from "@paymaster/shared";
import type { CallContext } from "../rpc/method.ts";
import type { NetworkChain } from "../context.ts";
import type { SponsorRequest } from "../rpc/schemas.ts";
import type { EntryPointConfig } from "../config/types.ts";
import { RpcError } from "../rpc/errors.ts";
import { simulateCalls, simulateOp, type ExecutionResult, type SimulatedOp, type SimulationFailure } from "../chain/entryPoint.ts";
import { l1DataGas, l2GasPrice } from "../chain/l1Fee.ts";
import { limitsFromSimulation, preVerificationGas } from "./gas.ts";
import { exchangeRate, type UsdPrice } from "./price.ts";
import { capVerdicts, splitRules, refuseOnFirstFailure, resolveMode, strategyVerdicts, type ResolvedMode } from "./policy.ts";
import { capChecks, evaluateRules, formatUsdMicros, weiToUsdMicros } from "../policy/rules.ts";
import type { RuleVerdict } from "../policy/types.ts";
import { chainWait, type Timing } from "../timing.ts";
import { isStoreError } from "../store/errors.ts";
import { askApproval } from "../webhooks/approval.ts";
import type { NewSponsorship, ReserveResult } from "../store/types.ts";
import type { CapCheck } from "../policy/types.ts";
import { lookupsOf } from "../store/configCache.ts";

export interface GasValues {
  callGasLimit: bigint;
  verificationGasLimit: bigint;
  preVerificationGas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** v0.7 only (0 for v0.6). */
  paymasterVerificationGasLimit: bigint;
  paymasterPostOpGasLimit: bigint;
}

export interface TokenQuote {
  symbol: string;
  address: Address;
  decimals: number;
  exchangeRate: bigint;
  maxTokenCost: bigint;
  chargeMode: ChargeMode;
}

export interface PipelineResult {
  version: EntryPointVersion;
  entryPoint: Address;
  paymaster: Address;
  mode: ResolvedMode;
  gas: GasValues;
  maxCostWei: bigint;
  token: TokenQuote | null;
  /** Final (signed) or stub paymasterAndData, full field (v0.7 packed with the gas limits). */
  paymasterAndData: Hex;
  /** Set when signed: the EntryPoint's hash of the returned op. */
  userOpHash: Hex | null;
  validUntil: number;
  validAfter: number;
  sponsorshipId: string | null;
  /** Sponsor mode: every policy verdict (all passing unless this is a dry run). */
  verdicts: RuleVerdict[];
  maxCostUsdMicros: bigint;
}


function requireChain(call: CallContext): NetworkChain {
  const chain = call.network.chain;
  // No chain yet: the network's RPC has not answered since start-up (it is not ready).
  if (!chain) throw new RpcError("CHAIN_UNAVAILABLE", `Network ${call.network.config.name} is not ready: its RPC has not answered yet`, { network: call.network.config.name });
  return chain;
}

/** The version's op with the given gas values and paymaster data (paymasterData excludes the address). */
function buildOp(request: SponsorRequest, gas: GasValues, paymaster: Address, paymasterData: Hex): SimulatedOp {
  if (request.version === "v0.6") {
    const u = request.userOp;
    const userOp: UserOperationV06 = {
      sender: u.sender,
      nonce: u.nonce,
      initCode: u.initCode,
      callData: u.callData,
      callGasLimit: gas.callGasLimit,
      verificationGasLimit: gas.verificationGasLimit,
      preVerificationGas: gas.preVerificationGas,
      maxFeePerGas: gas.maxFeePerGas,
      maxPriorityFeePerGas: gas.maxPriorityFeePerGas,
      paymasterAndData: encodePaymasterAndDataV06(paymaster, paymasterData),
      signature: u.signature,
    };
    return { version: "v0.6", userOp };
  }
  const u = request.userOp;
  const userOp: UserOperationV08 = {
    ...(u.eip7702Auth ? { eip7702Auth: u.eip7702Auth } : {}),
    sender: u.sender,
    nonce: u.nonce,
    ...(u.factory ? { factory: u.factory, factoryData: u.factoryData ?? "0x" } : {}),
    callData: u.callData,
    callGasLimit: gas.callGasLimit,
    verificationGasLimit: gas.verificationGasLimit,
    preVerificationGas: gas.preVerificationGas,
    maxFeePerGas: gas.maxFeePerGas,
    maxPriorityFeePerGas: gas.maxPriorityFeePerGas,
    paymaster,
    paymasterVerificationGasLimit: gas.paymasterVerificationGasLimit,
    paymasterPostOpGasLimit: gas.paymasterPostOpGasLimit,
    paymasterData,
    signature: u.signature,
  };
  return { version: request.version, userOp };
}

function paymasterAndDataOf(op: SimulatedOp): Hex {
  if (op.version === "v0.6") return op.userOp.paymasterAndData;
  const u = op.userOp;
  return encodePaymasterAndDataV07({
    paymaster: u.paymaster!,
    paymasterVerificationGasLimit: u.paymasterVerificationGasLimit!,
    paymasterPostOpGasLimit: u.paymasterPostOpGasLimit!,
    paymasterData: u.paymasterData!,
  });
}

/**
 * The op as it will land, packed once (v0.7, v0.8): the final simulation's calldata, its userOpHash and the answer's
 * paymasterAndData all read that one packing. Built here and never changed after.
 */
function packedOnce(op: SimulatedOp): SimulatedOp {
  return op.version === "v0.6" ? op : { ...op, packed: packUserOpV07(op.userOp) };
}

/** The EntryPoint's userOpHash of `op` and its full paymasterAndData field (from its packing when it has one). */
function landedFields(op: SimulatedOp, entryPoint: Address, chainId: number): { userOpHash: Hex; paymasterAndData: Hex } {
  if (op.version === "v0.6") return { userOpHash: getUserOpHashV06(op.userOp, entryPoint, chainId), paymasterAndData: op.userOp.paymasterAndData };
  const packed = op.packed ?? packUserOpV07(op.userOp);
  // v0.8 hashes EIP-712 typed data; a 7702 op's initCode hash binds the delegate its authorization sets.
  const userOpHash =
    op.version === "v0.7"
      ? getPackedUserOpHashV07(packed, entryPoint, chainId)
      : getPackedUserOpHashV08(packed, entryPoint, chainId, op.userOp.eip7702Auth?.address);
  return { userOpHash, paymasterAndData: packed.paymasterAndData };
}

function maxGasCost(op: SimulatedOp): bigint {
  return op.version === "v0.6" ? maxGasCostV06(op.userOp) : maxGasCostV07(op.userOp);
}

/** A given (non-zero) client value, else undefined: zero means "estimate it". */
function given(value: bigint | undefined): bigint | undefined {
  return value === undefined || value === 0n ? undefined : value;
}

function simulationError(failure: SimulationFailure): RpcError {
  const details = { aaCode: failure.aaCode, entryPointReason: failure.reason, ...(failure.inner ? { revertData: failure.inner.slice(0, 514) } : {}) };
  if (failure.aaCode === "AA31") return new RpcError("PAYMASTER_DEPOSIT_LOW", undefined, details);
  return new RpcError("SIMULATION_FAILED", `The EntryPoint would reject this user operation: ${failure.reason}`, details);
}

async function tokenRead(chain: NetworkChain, token: Address, functionName: "balanceOf" | "allowance", args: Address[]): Promise<bigint> {
  const data = encodeFunctionData({ abi: erc20Abi as Abi, functionName, args });
  const output = await chain.rpc.request<Hex>("eth_call", [{ to: token, data }, "latest"]);
  return decodeFunctionResult({ abi: erc20Abi as Abi, functionName, data: output }) as bigint;
}

function checkCaps(gas: GasValues, call: CallContext, marketMaxFee: bigint) {
  const caps = call.network.config.caps;
  const limits: [keyof GasValues, bigint][] = [
    ["verificationGasLimit", caps.maxVerificationGasLimit],
    ["callGasLimit", caps.maxCallGasLimit],
    ["preVerificationGas", caps.maxPreVerificationGas],
    ["paymasterVerificationGasLimit", caps.maxPaymasterVerificationGasLimit],
    ["paymasterPostOpGasLimit", caps.maxPaymasterPostOpGasLimit],
  ];
  for (const [field, limit] of limits) {
    if (gas[field] > limit) {
      throw new RpcError("GAS_LIMIT_TOO_HIGH", `${field} ${gas[field]} is above this network's cap ${limit}`, {
        rule: field,
        limit: limit.toString(),
        value: gas[field].toString(),
      });
    }
  }
  const feeCap = (marketMaxFee * BigInt(caps.maxFeeMultiplierBps)) / 10_000n;
  if (gas.maxFeePerGas > feeCap) {
    throw new RpcError("FEE_TOO_HIGH", `maxFeePerGas ${gas.maxFeePerGas} is above ${feeCap} (market x ${caps.maxFeeMultiplierBps / 10_000})`, {
      rule: "maxFeePerGas",
      limit: feeCap.toString(),
      value: gas.maxFeePerGas.toString(),
    });
  }
  if (gas.maxPriorityFeePerGas > gas.maxFeePerGas) {
    throw new RpcError("INVALID_PARAMS", "maxPriorityFeePerGas is above maxFeePerGas", {
      issues: [{ path: [0, "maxPriorityFeePerGas"], message: "must not exceed maxFeePerGas" }],
    });
  }
}

export interface PipelineOptions {
  /** Reserve the maximum cost and sign (pm_sponsorUserOperation, pm_getPaymasterData); otherwise answer with stub data. */
  sign: boolean;
  /**
   * ERC-7677 stub data (pm_getPaymasterStubData): policy, caps and the paymasters' constant gas limits only;
   * no simulation and no estimate (the wallet's bundler estimates the op's own gas next). Implies sign = false.
   */
  stub?: boolean;
  /**
   * Policy only (the dry run): collect every verdict instead of refusing on the first, include the caps'
   * current totals, and stop before the final simulation. Implies sign = false.
   */
  dryRun?: boolean;
}

export async function runSponsorPipeline(request: SponsorRequest, call: CallContext, options: PipelineOptions): Promise<PipelineResult> {
  const { service, network } = call;
  const chain = requireChain(call);
  const entry: EntryPointConfig | undefined = network.entryPoint(request.version);
  if (!entry) {
    throw new RpcError("UNSUPPORTED_ENTRYPOINT_VERSION", `${network.config.name} does not serve EntryPoint ${request.version}`, {
      supported: network.versions,
    });
  }
  const stub = options.stub === true;

  // ---- mode and policy (store only)
  const market = await chainWait(call.timing, () => chain.market.current());
  const now = Math.max(service.now(), market.timestamp);
  const mode = await resolveMode(call, request);
  const verdicts: RuleVerdict[] = [];
  const u = request.userOp;
  if (mode.mode === "sponsor") {
    // Cheap checks first, so a refused sender or call costs no chain work.
    const early = [
      ...strategyVerdicts(mode.strategy, network.config.name, now),
      ...evaluateRules(splitRules(mode.strategy.rules).call, ruleInput(request)),
    ];
    if (!options.dryRun) refuseOnFirstFailure(mode.strategy, early);
    verdicts.push(...early);
  }
  const paymaster = mode.mode === "erc20" ? entry.erc20Paymaster : entry.verifyingPaymaster;
  const erc20Info = chain.erc20[request.version];
  const postOpGas = mode.mode === "erc20" ? erc20Info!.postOpGas : 0n;
  // The ERC-20 paymaster refuses a postOp gas limit below its worst-case postOp (v0.6: verificationGasLimit).
  const minPostOpGasLimit = mode.mode === "erc20" ? erc20Info!.minPostOpGasLimit : 0n;

  // ---- fees and the limits the client gave
  const clientPmVerification = request.version !== "v0.6" ? given(request.userOp.paymasterVerificationGasLimit) : undefined;
  const clientPmPostOp = request.version !== "v0.6" ? given(request.userOp.paymasterPostOpGasLimit) : undefined;
  const gas: GasValues = {
    callGasLimit: given(u.callGasLimit) ?? 0n,
    verificationGasLimit: given(u.verificationGasLimit) ?? 0n,
    preVerificationGas: given(u.preVerificationGas) ?? 0n,
    maxFeePerGas: given(u.maxFeePerGas) ?? market.maxFeePerGas,
    maxPriorityFeePerGas: given(u.maxPriorityFeePerGas) ?? market.maxPriorityFeePerGas,
    paymasterVerificationGasLimit:
      request.version === "v0.6" ? 0n : (clientPmVerification ?? PAYMASTER_VERIFICATION_GAS[mode.mode === "erc20" ? "erc20" : "verifying"]),
    paymasterPostOpGasLimit:
      request.version === "v0.6" ? 0n : mode.mode === "erc20" ? maxOf(clientPmPostOp ?? 0n, minPostOpGasLimit) : (clientPmPostOp ?? 0n),
  };
  if (gas.maxPriorityFeePerGas > gas.maxFeePerGas && given(u.maxPriorityFeePerGas) === undefined) gas.maxPriorityFeePerGas = gas.maxFeePerGas;
  // What the client gave for the op's own gas (the stub checks its gas rules only then).
  const clientGasComplete = gas.callGasLimit !== 0n && gas.verificationGasLimit !== 0n && gas.preVerificationGas !== 0n;

  const validUntil = now + service.config.signatureTtlSeconds;
  const validAfter = now - 60;
  const window = { validUntil, validAfter };

  // ---- ERC-20: the rate, and (past the stub) what the sender holds and allows
  let token: TokenQuote | null = null;
  let tokenRate = 0n;
  let balance = 0n;
  let allowance = 0n;
  let nativeUsd: UsdPrice | undefined;
  if (mode.mode === "erc20") {
    const [native, tokenUsd, held, allowed] = await chainWait(call.timing, () =>
      Promise.all([
        chain.prices.usd(network.config.nativeUsdPrice),
        chain.prices.usd(mode.token.priceSource),
        stub ? 0n : tokenRead(chain, mode.token.address, "balanceOf", [u.sender]),
        stub ? 0n : tokenRead(chain, mode.token.address, "allowance", [u.sender, paymaster]),
      ]),
    );
    nativeUsd = native;
    tokenRate = exchangeRate(native, tokenUsd, mode.token.decimals, mode.token.markupBps);
    balance = held;
    allowance = allowed;
  }
  // The signed cap on the token charge (audit 2, N-7): none in estimation stubs, the op's maximum token cost once known.
  let maxTokenCharge = STUB_MAX_TOKEN_CHARGE;
  const paymasterDataWith = (chargeMode: ChargeMode, signature: Hex): Hex =>
    mode.mode === "erc20"
      ? encodeErc20PaymasterData({ ...window, token: mode.token.address, exchangeRate: tokenRate, chargeMode, maxTokenCharge }, signature)
      : encodeVerifyingPaymasterData(window, signature);
  const stubData = (chargeMode: ChargeMode): Hex => paymasterDataWith(chargeMode, STUB_SIGNATURE);
  // Estimation runs at a 1-wei price, where any allowance covers a pre-charge.
  let chargeMode: ChargeMode = mode.mode === "erc20" && allowance === 0n ? ChargeMode.InPostOp : ChargeMode.PreCharge;

  checkCaps(gas, call, market.maxFeePerGas); // the client's own values first: an over-cap limit must never reach the simulation
  // ---- estimation of what the client left out, from one run with generous limits at a 1-wei price
  if (!stub) {
    const needsEstimate = gas.callGasLimit === 0n || gas.verificationGasLimit === 0n;
    const estimatePreVerificationGas = gas.preVerificationGas === 0n;
    if (estimatePreVerificationGas) gas.preVerificationGas = preVerificationGas(buildOp(request, gas, paymaster, stubData(chargeMode)));
    if (needsEstimate) {
      const caps = network.config.caps;
      const generous: GasValues = {
        ...gas,
        callGasLimit: gas.callGasLimit || caps.maxCallGasLimit,
        verificationGasLimit: gas.verificationGasLimit || caps.maxVerificationGasLimit,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
        paymasterVerificationGasLimit: request.version !== "v0.6" ? caps.maxPaymasterVerificationGasLimit : 0n,
      };
      const probe = buildOp(request, generous, paymaster, stubData(chargeMode));
      const outcome = await chainWait(call.timing, () => simulateOp(chain.rpc, chain.simulator, entry.entryPoint, probe));
      if (!outcome.ok) throw simulationError(outcome.failure);
      // v0.7 tells whether the op's calls ran through: a revert is refused here already (with its revert data),
      // whether or not the final simulation runs.
      if (outcome.result.opSucceeded === false) await refuseRevertingCalls(call.timing, chain, entry.entryPoint, request, generous, paymaster, stubData(chargeMode));
      const measured = limitsFromSimulation(probe, outcome.result, postOpGas, minPostOpGasLimit);
      if (gas.callGasLimit === 0n) gas.callGasLimit = measured.callGasLimit;
      if (gas.verificationGasLimit === 0n) gas.verificationGasLimit = measured.verificationGasLimit;
    }
    // EIP-7623's floor in preVerificationGas counts on the final call and postOp limits.
    if (estimatePreVerificationGas && needsEstimate) gas.preVerificationGas = preVerificationGas(buildOp(request, gas, paymaster, stubData(chargeMode)));
    if (estimatePreVerificationGas && network.config.gasKind !== "l1") {
      // On a rollup the bundler pays for the bundle's L1 data and gets it back only through preVerificationGas.
      // Priced on the op with its final limits (their bytes are part of the data).
      const op = buildOp(request, gas, paymaster, stubData(chargeMode));
      const input = { chainId: network.config.chainId, entryPoint: entry.entryPoint, op, l2GasPrice: l2GasPrice(gas, market.baseFeePerGas) };
      gas.preVerificationGas += await chainWait(call.timing, () => l1DataGas(chain.rpc, network.config.gasKind, input));
    }
    checkCaps(gas, call, market.maxFeePerGas);
  }

  // ---- ERC-20: maximum token cost against balance and allowance
  if (mode.mode === "erc20") {
    const op = buildOp(request, gas, paymaster, stubData(chargeMode));
    const preChargeWei = op.version === "v0.6" ? preChargeGasCostV06(op.userOp, postOpGas) : preChargeGasCostV07(op.userOp);
    const maxTokenCost = tokenCost(preChargeWei, tokenRate);
    if (!stub && balance < maxTokenCost) {
      throw new RpcError("TOKEN_BALANCE_INSUFFICIENT", undefined, {
        token: mode.token.symbol,
        required: maxTokenCost.toString(),
        balance: balance.toString(),
      });
    }
    // Pre-charge when the allowance already covers the maximum; otherwise charge in postOp, which the
    // simulation below must show succeeding (the op's own calls may approve the paymaster).
    if (!stub) {
      maxTokenCharge = maxTokenCost;
      chargeMode = allowance >= maxTokenCost ? ChargeMode.PreCharge : ChargeMode.InPostOp;
      // Charging in postOp trusts the op's own calls to leave the allowance in place, which a sender can defeat
      // for free (THREAT_MODEL.md, item 3): one whose postOp charge went unpaid gets pre-charge only.
      if (chargeMode === ChargeMode.InPostOp && (await service.store.hasUnpaidTokenCharge(network.config.name, u.sender))) {
        throw new RpcError("TOKEN_CHARGE_UNPAID", undefined, { token: mode.token.symbol, paymaster, required: maxTokenCost.toString() });
      }
    }
    token = {
      symbol: mode.token.symbol,
      address: mode.token.address,
      decimals: mode.token.decimals,
      exchangeRate: tokenRate,
      maxTokenCost,
      chargeMode,
    };
  }

  // ---- gas and charge mode are final: the op as it will be signed (with stub paymaster data)
  const finalStub = buildOp(request, gas, paymaster, stubData(chargeMode));
  const maxCostWei = maxGasCost(finalStub);

  // ---- the strategy's gas, fee and per-op rules, and its caps
  nativeUsd ??= await chainWait(call.timing, () => chain.prices.usd(network.config.nativeUsdPrice));
  const maxCostUsdMicros = weiToUsdMicros(maxCostWei, nativeUsd);
  const caps = mode.mode === "sponsor" ? capChecks(mode.strategy.rules, { now, sender: u.sender }) : [];
  if (mode.mode === "sponsor" && (!stub || clientGasComplete)) {
    // The call rules already ran before any chain work; the rest need the gas figures.
    const late = evaluateRules(splitRules(mode.strategy.rules).rest, {
      ...ruleInput(request),
      gas,
      marketMaxFeePerGas: market.maxFeePerGas,
      maxCostWei,
      maxCostUsdMicros,
    });
    if (!options.dryRun) refuseOnFirstFailure(mode.strategy, late);
    verdicts.push(...late);
    if (options.dryRun) {
      const op = { network: network.config.name, entryPoint: entry.entryPoint, sender: u.sender, nonce: u.nonce };
      verdicts.push(...(await capVerdicts(service.store, mode.strategy, caps, maxCostWei, maxCostUsdMicros, op)));
    }
  }
  const result: PipelineResult = {
    version: request.version,
    entryPoint: entry.entryPoint,
    paymaster,
    mode,
    gas,
    maxCostWei,
    token,
    // A signed answer carries the landing op's (set once the reservation holds); the others, the stub data's.
    paymasterAndData: options.sign && !options.dryRun && !stub ? "0x" : paymasterAndDataOf(finalStub),
    userOpHash: null,
    validUntil,
    validAfter,
    sponsorshipId: null,
    verdicts,
    maxCostUsdMicros,
  };
  if (options.dryRun || stub) return result;

  // ---- the project's approval webhook, when it has one (bounded by its timeout; src/webhooks/approval.ts)
  if (options.sign) await requireApproval(call, request, mode, maxCostWei, maxCostUsdMicros);

  // ---- sign: the op as it will land (kept in this function until the simulation and the reservation pass)
  const chainId = network.config.chainId;
  let landing = finalStub;
  if (options.sign) {
    const hashParams = { ...finalStub, chainId, paymaster, ...window } as const;
    const hash =
      mode.mode === "erc20"
        ? erc20PaymasterHash({ ...hashParams, token: mode.token.address, exchangeRate: tokenRate, chargeMode, maxTokenCharge } as Parameters<typeof erc20PaymasterHash>[0])
        : verifyingPaymasterHash(hashParams as Parameters<typeof verifyingPaymasterHash>[0]);
    landing = packedOnce(buildOp(request, gas, paymaster, paymasterDataWith(chargeMode, await chain.signer.signHash(hash))));
  }

  // ---- the final simulation: ONE run of that op (validation with the real limits, fees and paymaster data,
  // the op's calls, postOp), reading the paymaster's token balance right after it in ERC-20 mode
  const simulate = network.config.skipFinalSimulation !== true;
  if (!options.sign) {
    if (simulate) await checkLanding(call.timing, chain, entry.entryPoint, request, landing, mode, token, false);
    return result;
  }
  // While it runs, the store work that does not depend on it: the deposit check and the reservation, recorded
  // as pending (its signature is kept, not handed out). Then, in the order a sequential run would refuse in:
  // a refused simulation withdraws the reservation (deleted, what it held freed: a refused op leaves no record)
  // and is the answer; a passed one makes the reservation "signed" (with its webhook event), and only then does
  // the signature leave.
  const simulation: Promise<{ failed: unknown } | undefined> = simulate
    ? checkLanding(call.timing, chain, entry.entryPoint, request, landing, mode, token, true).then(
        () => undefined,
        (error: unknown) => ({ failed: error }),
      )
    : Promise.resolve(undefined);
  const { userOpHash, paymasterAndData } = landedFields(landing, entry.entryPoint, chainId);
  const reserving = reserveLanding(call, {
    network: network.config.name,
    entryPoint: entry.entryPoint,
    version: request.version,
    sender: u.sender,
    nonce: u.nonce,
    mode: mode.mode,
    projectId: call.apiKey.projectId,
    apiKeyId: call.apiKey.id,
    strategyId: mode.mode === "sponsor" ? mode.strategy.id : null,
    token: token?.address ?? null,
    exchangeRate: token?.exchangeRate ?? null,
    maxTokenCost: token?.maxTokenCost ?? null,
    maxCostWei,
    maxCostUsdMicros,
    validUntil,
    validAfter,
    userOpHash,
    paymasterAndData,
    // At most one outstanding postOp-charge sponsorship per sender: what one unpaid op can cost is bounded.
    postOpCharge: mode.mode === "erc20" && chargeMode === ChargeMode.InPostOp,
    pending: simulate,
  }, caps, paymaster, market.blockNumber).then(
    (reservation): { reservation: ReserveResult } => ({ reservation }),
    (error: unknown): { failed: unknown } => ({ failed: error }),
  );
  const [simulated, reserved] = await Promise.all([simulation, reserving]);
  if (simulated !== undefined) {
    if ("reservation" in reserved && reserved.reservation.ok) {
      const id = reserved.reservation.record.id;
      // Should the store fail here, the pending row holds its cost until the expiry releases it: the answer is still the refusal.
      await service.store.withdrawSponsorship(id).catch((error: unknown) => service.logger.warn({ err: error, sponsorshipId: id }, "could not withdraw a refused reservation"));
    }
    throw simulated.failed;
  }
  if ("failed" in reserved) throw reserved.failed;
  const reservation = reserved.reservation;
  if (!reservation.ok) throw reservationRefusal(reservation, mode, token, paymaster);
  if (simulate && !(await service.store.confirmSponsorship(reservation.record.id))) {
    // Replaced by a concurrent request for the same op while the simulation ran: that one stands.
    throw new RpcError("SPONSORSHIP_CONFLICT", undefined, { sender: u.sender, nonce: `0x${u.nonce.toString(16)}` });
  }
  result.paymasterAndData = paymasterAndData;
  result.userOpHash = userOpHash;
  result.sponsorshipId = reservation.record.id;
  service.metrics?.sponsorshipsSigned.inc({ network: network.config.name, mode: mode.mode, version: request.version });
  return result;
}

/**
 * The paymaster's deposit must cover this op on top of every outstanding one (src/sponsor/deposit.ts); then the
 * reservation and the record, in ONE store transaction.
 */
async function reserveLanding(
  call: CallContext,
  input: NewSponsorship,
  caps: readonly CapCheck[],
  paymaster: Address,
  block: bigint,
): Promise<ReserveResult> {
  const chain = call.network.chain!;
  await chainWait(call.timing, () =>
    chain.deposits.check({ entryPoint: input.entryPoint, paymaster, kind: input.mode === "erc20" ? "erc20" : "verifying", block, maxCostWei: input.maxCostWei }),
  );
  try {
    return await call.service.store.reserveSponsorship(input, caps);
  } catch (error) {
    // PostgreSQL: concurrent requests for the same op (sender, nonce) kept replacing each other's view of it through
    // every retry. One of them stands; this one's signature is never handed out, and the caps count the op once.
    if (isStoreError(error, "CONFLICT")) throw new RpcError("SPONSORSHIP_CONFLICT", undefined, { sender: input.sender, nonce: `0x${input.nonce.toString(16)}` });
    throw error;
  }
}

/** The answer to a reservation the store refused (nothing was written). */
function reservationRefusal(refused: Exclude<ReserveResult, { ok: true }>, mode: ResolvedMode, token: TokenQuote | null, paymaster: Address): RpcError {
  if (refused.reason === "CAP_EXCEEDED") {
    // The store counts USD in micro-units; clients read dollars ("25.50"), as the per-op USD cap reports them.
    const usd = refused.rule.endsWith(".maxUsd");
    const dollars = (micros: string) => formatUsdMicros(BigInt(micros));
    const limit = usd ? dollars(refused.limit) : refused.limit;
    const value = usd ? dollars(refused.value) : refused.value;
    const what = usd ? `$${value} against a limit of $${limit}` : `${value} against a limit of ${limit}`;
    return new RpcError("STRATEGY_NOT_ALLOWED", `Strategy ${mode.mode === "sponsor" ? mode.strategy.code : ""} refuses this request: ${refused.rule} would be exceeded (${what})`, {
      rule: refused.rule,
      limit,
      value,
    });
  }
  if (refused.reason === "POSTOP_CHARGE_PENDING") {
    return new RpcError("POSTOP_CHARGE_PENDING", undefined, { token: token!.symbol, paymaster, required: token!.maxTokenCost.toString() });
  }
  return new RpcError("GAS_TANK_INSUFFICIENT", undefined, {
    requiredWei: refused.requiredWei.toString(),
    availableWei: refused.availableWei.toString(),
  });
}

/** Asks the project's approval endpoint, if any; a refusal (or no answer under default-deny) is APPROVAL_DENIED. */
async function requireApproval(call: CallContext, request: SponsorRequest, mode: ResolvedMode, maxCostWei: bigint, maxCostUsdMicros: bigint): Promise<void> {
  const endpoint = await lookupsOf(call).approvalEndpoint(call.apiKey.projectId);
  if (!endpoint) return;
  const u = request.userOp;
  const decision = await askApproval(endpoint, {
    network: call.network.config.name,
    version: request.version,
    sender: u.sender,
    nonce: u.nonce.toString(),
    callData: u.callData,
    mode: mode.mode,
    strategyCode: mode.mode === "sponsor" ? mode.strategy.code : null,
    token: mode.mode === "erc20" ? mode.token.address : null,
    maxCostWei: maxCostWei.toString(),
    maxCostUsdMicros: maxCostUsdMicros.toString(),
    apiKeyId: call.apiKey.id,
  });
  if (decision.approved) return;
  throw new RpcError("APPROVAL_DENIED", `The project's approval webhook refused this user operation: ${decision.reason}`, { reason: decision.reason, by: decision.by });
}

/**
 * Refuses an op whose calls revert, with their revert data: the calls run alone, from the EntryPoint right
 * after validation (the op with empty callData, the calls as simulateHandleOp's target call). Returns when
 * the calls succeed.
 */
async function refuseRevertingCalls(timing: Timing | undefined, chain: NetworkChain, entryPoint: Address, request: SponsorRequest, gas: GasValues, paymaster: Address, paymasterData: Hex): Promise<void> {
  const withoutCalls = buildOp({ ...request, userOp: { ...request.userOp, callData: "0x" } } as SponsorRequest, gas, paymaster, paymasterData);
  const calls = await chainWait(timing, () => simulateCalls(chain.rpc, chain.simulator, entryPoint, withoutCalls, request.userOp.sender, request.userOp.callData));
  if (!calls.ok) throw simulationError(calls.failure);
  if (!calls.result.targetSuccess) {
    throw new RpcError("EXECUTION_REVERTED", undefined, { revertData: calls.result.targetResult.slice(0, 514) });
  }
}

/**
 * The final check of `op` as it will land, in one simulation: the EntryPoint accepts it (AAxx otherwise), our
 * signature verifies (v0.7 reports it), its calls do not revert, and in ERC-20 mode the paymaster's token
 * balance grew. v0.7's simulator reports the execution outcome, so the calls run again alone only to explain
 * a failure; v0.6's EntryPoint has no such hook, so there the calls' run goes alongside (same latency).
 */
async function checkLanding(
  timing: Timing | undefined,
  chain: NetworkChain,
  entryPoint: Address,
  request: SponsorRequest,
  op: SimulatedOp,
  mode: ResolvedMode,
  token: TokenQuote | null,
  signed: boolean,
): Promise<void> {
  const gas = gasOf(op);
  const paymaster = op.version === "v0.6" ? (op.userOp.paymasterAndData.slice(0, 42) as Address) : op.userOp.paymaster!;
  // ERC-20 mode: the fee stays in the paymaster (swept to the treasury later), so the charge shows as the
  // paymaster's own token balance growing. Only ERC-20 mode reads it: viem's generic encoder is not worth
  // running for the others.
  const read = mode.mode === "erc20" ? { to: mode.token.address, data: encodeFunctionData({ abi: erc20Abi as Abi, functionName: "balanceOf", args: [paymaster] }) } : undefined;
  const paymasterData = op.version === "v0.6" ? (`0x${op.userOp.paymasterAndData.slice(42)}` as Hex) : op.userOp.paymasterData!;
  const [landing, callsFirst, heldBefore] = await chainWait(timing, () =>
    Promise.all([
      simulateOp(chain.rpc, chain.simulator, entryPoint, op, read),
      // v0.6: the calls' own run alongside; its refusal is raised after the EntryPoint's (as one simulation would).
      op.version === "v0.6"
        ? refuseRevertingCalls(undefined, chain, entryPoint, request, gas, paymaster, paymasterData).then( // counted by the wait around it
            () => undefined,
            (error: unknown) => error,
          )
        : undefined,
      mode.mode === "erc20" ? tokenRead(chain, mode.token.address, "balanceOf", [paymaster]) : Promise.resolve(0n),
    ]),
  );
  if (!landing.ok) throw simulationError(landing.failure);
  if (callsFirst !== undefined) throw callsFirst;
  const result: ExecutionResult = landing.result;
  if (signed && result.paymasterSigFailed) {
    throw new RpcError("SIMULATION_FAILED", "The EntryPoint would reject this user operation: AA34 signature error (the paymaster does not accept this service's signer)", {
      aaCode: "AA34",
      entryPointReason: "AA34 signature error",
    });
  }
  if (result.opSucceeded === false) {
    await refuseRevertingCalls(timing, chain, entryPoint, request, gas, paymaster, paymasterData);
    if (mode.mode !== "erc20") throw new RpcError("EXECUTION_REVERTED", "The user operation's execution would fail", {});
  }
  if (mode.mode === "erc20") {
    const after = result.targetSuccess ? (decodeFunctionResult({ abi: erc20Abi as Abi, functionName: "balanceOf", data: result.targetResult }) as bigint) : 0n;
    if (after <= heldBefore) {
      throw new RpcError("TOKEN_ALLOWANCE_INSUFFICIENT", "The paymaster could not charge the token: approve the paymaster first, or in this op's own calls", {
        token: mode.token.symbol,
        paymaster,
        required: token!.maxTokenCost.toString(),
      });
    }
  }
}

/** The gas values an op carries (to rebuild it with other callData or paymaster data). */
function gasOf(op: SimulatedOp): GasValues {
  const u = op.userOp;
  return {
    callGasLimit: u.callGasLimit,
    verificationGasLimit: u.verificationGasLimit,
    preVerificationGas: u.preVerificationGas,
    maxFeePerGas: u.maxFeePerGas,
    maxPriorityFeePerGas: u.maxPriorityFeePerGas,
    paymasterVerificationGasLimit: op.version !== "v0.6" ? (op.userOp.paymasterVerificationGasLimit ?? 0n) : 0n,
    paymasterPostOpGasLimit: op.version !== "v0.6" ? (op.userOp.paymasterPostOpGasLimit ?? 0n) : 0n,
  };
}

/** The parts of a rule input that need no gas figures (gas rules are not configured in the early pass). */
function ruleInput(request: SponsorRequest) {
  const { sender, callData } = request.userOp;
  const eip7702Delegate = request.version === "v0.6" ? undefined : request.userOp.eip7702Auth?.address;
  return { sender, callData, entryPointVersion: request.version, ...(eip7702Delegate ? { eip7702Delegate } : {}), gas: { callGasLimit: 0n, verificationGasLimit: 0n, preVerificationGas: 0n, maxFeePerGas: 0n }, marketMaxFeePerGas: 0n, maxCostWei: 0n, maxCostUsdMicros: 0n };
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

export { packUserOpV07 };
