/**
 * Gas tanks (User Sponsor mode): list, show, ledger, credit, debit, and which projects may draw from a tank
 * (allow, disallow). A reference makes a credit or debit idempotent.
 */
import { randomUUID } from "node:crypto";
import { audit, guarded, invalid, knownNetwork, read, validAddress, validWei, type AdminContext, mutation } from "./context.ts";
import type { GasTankConsentRecord, TankLedgerEntry } from "../store/types.ts";
import { tankView } from "./views.ts";

interface TankInput {
  network: unknown;
  sender: unknown;
}

function reference(value: unknown): string {
  if (value === undefined) return `admin:${randomUUID()}`;
  if (typeof value !== "string" || value === "" || value.length > 200) invalid("reference: must be a string of 1 to 200 characters");
  return value;
}

const consentView = (c: GasTankConsentRecord) => ({ projectId: c.projectId, allowed: c.allowed, changedBy: c.changedBy, issuedAt: c.issuedAt, updatedAt: c.updatedAt });

/** The tank and the projects its consents name (allowed or no longer). */
export const showTank = read("viewer", async function showTank(ctx: AdminContext, input: TankInput) {
  const network = knownNetwork(ctx, input.network);
  const sender = validAddress(input.sender, "sender");
  const [tank, consents] = await Promise.all([guarded(() => ctx.store.getGasTank(network, sender)), ctx.store.gasTankConsents(network, sender)]);
  return { ...tankView(tank), projects: consents.map(consentView) };
});

/**
 * The operator allows (or no longer allows) a project to draw from a sender's tank — for a tank owner who asked
 * out of band, or whose account cannot sign a consent (no ERC-1271). Dated when recorded and always applied;
 * a disallow then beats every consent signed before it (store/tankConsentClock.ts). Before and after go to the
 * audit log. Called inside the admin mutations below (their role check and transaction).
 */
async function changeTankConsent(ctx: AdminContext, input: TankInput & { project: unknown }, allowed: boolean) {
  const network = knownNetwork(ctx, input.network);
  const sender = validAddress(input.sender, "sender");
  if (typeof input.project !== "string" || input.project === "") invalid("project: a project id");
  const projectId = input.project;
  // An unknown project is the store's NOT_FOUND (the consent's foreign key).
  const { consent, previous } = await guarded(() => ctx.store.setGasTankConsent({ network, sender, projectId, allowed, changedBy: ctx.actor }));
  const after = { network, sender, ...consentView(consent) };
  await audit(ctx, allowed ? "tank.allow" : "tank.disallow", `${network}:${sender}`, previous ? consentView(previous) : null, after);
  return after;
}

export const allowTankProject = mutation("admin", function allowTankProject(ctx: AdminContext, input: TankInput & { project: unknown }) {
  return changeTankConsent(ctx, input, true);
});

export const disallowTankProject = mutation("admin", function disallowTankProject(ctx: AdminContext, input: TankInput & { project: unknown }) {
  return changeTankConsent(ctx, input, false);
});

/** A credit or a debit by hand, inside the admin mutations below: the tank before and after go to the audit log. */
async function adjustTank(ctx: AdminContext, input: TankInput & { wei: unknown; reference?: unknown }, kind: "credit" | "debit") {
  const network = knownNetwork(ctx, input.network);
  const sender = validAddress(input.sender, "sender");
  const wei = validWei(input.wei, "wei");
  const ref = reference(input.reference);
  const before = tankView(await ctx.store.getGasTank(network, sender));
  const change = kind === "credit" ? ctx.store.creditGasTank.bind(ctx.store) : ctx.store.debitGasTank.bind(ctx.store);
  const after = { ...tankView(await guarded(() => change(network, sender, wei, ref))), [`${kind}edWei`]: wei.toString(), reference: ref };
  await audit(ctx, `tank.${kind}`, `${network}:${sender}`, before, after);
  return after;
}

export const creditTank = mutation("admin", function creditTank(ctx: AdminContext, input: TankInput & { wei: unknown; reference?: unknown }) {
  return adjustTank(ctx, input, "credit");
});

/** Never beyond what is available (balance - reserved): the store refuses with CONFLICT. */
export const debitTank = mutation("admin", function debitTank(ctx: AdminContext, input: TankInput & { wei: unknown; reference?: unknown }) {
  return adjustTank(ctx, input, "debit");
});

function limitOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1 || n > 1000) invalid("limit: an integer from 1 to 1000");
  return n;
}

/** Gas tanks, most recently changed first (of one network when given). */
export const listTanks = read("viewer", async function listTanks(ctx: AdminContext, input: { network?: unknown; limit?: unknown }) {
  const network = input.network === undefined ? undefined : knownNetwork(ctx, input.network);
  const limit = limitOf(input.limit);
  const tanks = await guarded(() => ctx.store.listGasTanks({ ...(network ? { network } : {}), ...(limit ? { limit } : {}) }));
  return tanks.map((t) => ({ ...tankView(t), updatedAt: t.updatedAt }));
});

const entryView = (e: TankLedgerEntry) => ({
  kind: e.kind,
  at: e.at,
  amountWei: e.amountWei.toString(),
  reference: e.reference,
  ...(e.kind === "spend" ? { userOpHash: e.userOpHash ?? null, txHash: e.txHash ?? null } : {}),
});

/** A tank with its movements, newest first: credits (deposits, by hand), debits by hand, and the settled ops it paid for. */
export const tankLedger = read("viewer", async function tankLedger(ctx: AdminContext, input: TankInput & { limit?: unknown }) {
  const network = knownNetwork(ctx, input.network);
  const sender = validAddress(input.sender, "sender");
  const limit = limitOf(input.limit);
  const [tank, entries] = await Promise.all([ctx.store.getGasTank(network, sender), guarded(() => ctx.store.gasTankLedger(network, sender, limit))]);
  return { ...tankView(tank), entries: entries.slice(0, limit ?? 100).map(entryView) };
});
