/** JSON views of store objects for operators (bigints as decimal strings, USD micro-units as dollars). */
import { formatUsdMicros } from "../policy/rules.ts";
import { serializeRules } from "../policy/schema.ts";
import type { ApiKey, GasTank, Project, SponsorshipRecord, Strategy } from "../store/types.ts";

export const projectView = (p: Project) => ({ id: p.id, name: p.name, status: p.status, createdAt: p.createdAt });

export const keyView = (k: ApiKey) => ({
  id: k.id,
  projectId: k.projectId,
  prefix: k.prefix,
  label: k.label,
  status: k.status,
  createdAt: k.createdAt,
  revokedAt: k.revokedAt,
  allowedOrigins: k.allowedOrigins,
  allowedIps: k.allowedIps,
});

export const strategyView = (s: Strategy) => ({
  id: s.id,
  projectId: s.projectId,
  code: s.code,
  name: s.name,
  status: s.status,
  validFrom: s.validFrom,
  validUntil: s.validUntil,
  networks: s.networks,
  rules: serializeRules(s.rules),
  createdAt: s.createdAt,
});

export const tankView = (t: GasTank) => ({
  network: t.network,
  sender: t.sender,
  balanceWei: t.balanceWei.toString(),
  reservedWei: t.reservedWei.toString(),
  availableWei: (t.balanceWei > t.reservedWei ? t.balanceWei - t.reservedWei : 0n).toString(),
});

export const sponsorshipView = (s: SponsorshipRecord) => ({
  id: s.id,
  network: s.network,
  entryPoint: s.entryPoint,
  version: s.version,
  sender: s.sender,
  nonce: s.nonce.toString(),
  mode: s.mode,
  projectId: s.projectId,
  apiKeyId: s.apiKeyId,
  strategyId: s.strategyId,
  status: s.status,
  userOpHash: s.userOpHash,
  maxCostWei: s.maxCostWei.toString(),
  maxCostUsd: formatUsdMicros(s.maxCostUsdMicros),
  token: s.token,
  maxTokenCost: s.maxTokenCost?.toString() ?? null,
  validAfter: s.validAfter,
  validUntil: s.validUntil,
  createdAt: s.createdAt,
  settlement: s.settlement && {
    actualGasCostWei: s.settlement.actualGasCostWei.toString(),
    actualCostUsd: formatUsdMicros(s.settlement.actualCostUsdMicros),
    actualTokenCost: s.settlement.actualTokenCost?.toString() ?? null,
    success: s.settlement.success,
    txHash: s.settlement.txHash,
    blockNumber: s.settlement.blockNumber.toString(),
  },
});
