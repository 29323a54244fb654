/**
 * Administration operations: what the operator's CLI (src/cli) and the admin HTTP API (src/adminApi) both call.
 * Each operation is one function of this folder taking an `AdminContext`; the doors only parse their input and
 * render the answer. Every operation declares, where it is defined, the role it needs (roles.ts): `read(role, …)`
 * for what only reads, `mutation(role, …)` for a change, `operation(role, …)` for a change that cannot be one
 * database transaction (chain transactions, the prune pass). A context whose principal lacks the role is refused
 * before the operation runs (the admin API's gate refuses first, before it reads the body); one that declares no
 * role needs admin. A mutation is refused before anything is written unless the context names who acts, and the
 * change and its one audit log row (who, with which role, when, what, before/after) commit as one transaction,
 * whichever door called it. Secrets (key plaintexts) never go into it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { getAddress, isAddress } from "viem/utils";
import type { Address } from "@paymaster/shared";
import type { ServiceConfig } from "../config/types.ts";
import type { ServiceContext } from "../context.ts";
import { isStoreError } from "../store/errors.ts";
import { findUnsafeText } from "../text/safeText.ts";
import type { DestinationPolicy } from "../webhooks/destination.ts";
import type { Store } from "../store/types.ts";
import { declareRole, isRole, PUBLIC_PRINCIPAL, roleProblem, type Declared, type Principal, type Role } from "./roles.ts";

export interface AdminContext {
  store: Store;
  /** The configured networks' names (a network name given to an operation must be one of them). */
  networks: readonly string[];
  /** Who acts, for the audit log: "cli:<os user>", "api:<token name>", "console:<token name>" or "public:<client address>". */
  actor: string;
  /**
   * Who acts: the role of its token for the admin API and the console, admin for the CLI (it holds the database),
   * PUBLIC_PRINCIPAL for the public application door (its audit rows have no role). A context without one is
   * refused every operation.
   */
  role: Principal;
  now?: () => number;
  /** The configuration's sponsorship retention (`sponsorship prune` uses it; defaults when absent). */
  retention?: ServiceConfig["retention"];
  /** Where webhooks may be sent (the configuration's webhooks.allowedDestinations); absent: the service's, else public only. */
  webhookDestinations?: DestinationPolicy | undefined;
  /** Pending key applications expire after this many days (the configuration's; default 14). */
  applicationExpiryDays?: number | undefined;
  /**
   * The running service (the admin API inside it only): what operations that need its networks' chain access
   * or its sponsor pipeline use (network status, the policy dry run). The CLI has none.
   */
  service?: ServiceContext;
}

export type AdminErrorCode = "NOT_FOUND" | "INVALID_INPUT" | "CONFLICT" | "UNAVAILABLE" | "UNAUTHORIZED" | "FORBIDDEN";

/** One field of the input that is wrong: its path ("rules.caps.daily.maxUsd") and what is wrong with it. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** A refusal an operator can act on; the message names what is wrong (and `issues`, when given, each field). */
export class AdminError extends Error {
  override name = "AdminError";
  readonly code: AdminErrorCode;
  readonly issues: readonly FieldIssue[] | undefined;
  constructor(code: AdminErrorCode, message: string, issues?: readonly FieldIssue[]) {
    super(message);
    this.code = code;
    this.issues = issues;
  }
}

/** Store refusals as AdminErrors (NOT_FOUND stays, a duplicate or conflicting reference is CONFLICT, the rest INVALID_INPUT). */
export function asAdminError(err: unknown): unknown {
  if (!isStoreError(err)) return err;
  const code = err.code === "NOT_FOUND" ? "NOT_FOUND" : err.code === "DUPLICATE" || err.code === "CONFLICT" || err.code === "INVALID_STATE" ? "CONFLICT" : "INVALID_INPUT";
  return new AdminError(code, err.message);
}

/** Runs a store call, turning its refusals into AdminErrors. */
export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asAdminError(err);
  }
}

/** FORBIDDEN (403): the principal's role does not include the one needed, which the answer names. */
export class RoleRefused extends AdminError {
  override name = "RoleRefused";
  readonly requiredRole: Role;
  constructor(requiredRole: Role, message: string) {
    super("FORBIDDEN", message);
    this.requiredRole = requiredRole;
  }
}

/**
 * Refuses a context whose principal may not do what needs `needed` (`what` names the action): UNAUTHORIZED when
 * it names no principal, RoleRefused (403) when its role does not include `needed` (the public door's principal
 * holds no role), FORBIDDEN when `needed` is the public door's and the principal is an operator's.
 */
export function requireRole(ctx: Partial<Pick<AdminContext, "role">>, needed: Principal, what: string): void {
  const held: unknown = ctx.role;
  if (held !== PUBLIC_PRINCIPAL && !isRole(held)) throw new AdminError("UNAUTHORIZED", `${what}: no principal says who acts: refused`);
  if (needed === PUBLIC_PRINCIPAL) {
    if (held !== PUBLIC_PRINCIPAL) throw new AdminError("FORBIDDEN", `${what} is the public door's (an applicant's): an operator's principal does not call it`);
    return;
  }
  const problem = held === PUBLIC_PRINCIPAL ? `${what} needs the ${needed} role; the public door holds none` : roleProblem(held as Role, needed, what);
  if (problem) throw new RoleRefused(needed, problem);
}

export function invalid(message: string, issues?: readonly FieldIssue[]): never {
  throw new AdminError("INVALID_INPUT", message, issues);
}

/** INVALID_INPUT for one field: the message "<where>: <field>: <problem>" (as the CLI prints it), and the issue. */
export function invalidField(where: string, field: string, problem: string): never {
  throw new AdminError("INVALID_INPUT", `${where}: ${field}: ${problem}`, [{ field, message: problem }]);
}

/** The running service, for the operations only the admin API inside it can do. */
/**
 * INVALID_INPUT naming the field when a string of `input` (object keys included) is not safe text
 * (text/safeText.ts): what every door checks its whole input with before an operation sees it.
 */
export function requireSafeText(input: unknown, options: { root?: string; where?: string } = {}): void {
  const unsafe = findUnsafeText(input, options.root);
  if (unsafe === undefined) return;
  throw new AdminError("INVALID_INPUT", `${options.where === undefined ? "" : `${options.where}: `}${unsafe.field}: ${unsafe.message}`, [unsafe]);
}

export function runningService(ctx: AdminContext): ServiceContext {
  if (!ctx.service) throw new AdminError("UNAVAILABLE", "this needs the running service: use the admin API (or the console) of a service with PAYMASTER_ADMIN_TOKENS set");
  return ctx.service;
}

export function notFound(message: string): never {
  throw new AdminError("NOT_FOUND", message);
}

/** A configured network's name, else INVALID_INPUT listing the configured ones. */
export function knownNetwork(ctx: AdminContext, network: unknown): string {
  if (typeof network !== "string" || !ctx.networks.includes(network)) {
    invalid(`unknown network ${JSON.stringify(network)}: configured networks are ${ctx.networks.join(", ") || "none"}`);
  }
  return network;
}

export function validAddress(value: unknown, what: string): Address {
  if (typeof value !== "string" || !isAddress(value, { strict: false })) invalid(`${what}: not an address: ${JSON.stringify(value)}`);
  return getAddress(value);
}

/** A positive amount of wei from decimal text or a bigint. */
export function validWei(value: unknown, what: string): bigint {
  const text = typeof value === "bigint" ? value.toString() : value;
  if (typeof text !== "string" || !/^\d{1,78}$/.test(text) || BigInt(text) === 0n) {
    invalid(`${what}: must be a positive integer amount of wei, not ${JSON.stringify(typeof value === "bigint" ? text : value)}`);
  }
  return BigInt(text);
}

/** Who may act: "cli:<os user>", "api:<token name>", "console:<token name>", "public:<client address>". */
const ACTOR = /^(?:cli|api|console|public):[\x21-\x7e]{1,200}$/;

/** Set while a mutation runs: audit() outside one is a programming error (its change would not be atomic). */
const insideMutation = new AsyncLocalStorage<true>();

/** Refuses (before anything is read or written) a context that does not name who acts. */
export function requireActor(actor: unknown): string {
  if (typeof actor !== "string" || !ACTOR.test(actor)) throw new AdminError("UNAUTHORIZED", "no authenticated actor: the change is refused");
  return actor;
}

/** An operation as declared: the function, carrying the role it needs. */
export type AdminOperation<A extends unknown[], R> = Declared<(ctx: AdminContext, ...args: A) => Promise<R>>;

/**
 * Wraps `operation` so that it first refuses a principal that may not do what needs `role` (admin when undefined:
 * deny by default), and declares that role on it (unless undefined, or the public door's: no admin route offers
 * those; a test lists every route whose operation declares none).
 */
function declared<A extends unknown[], R>(role: Principal | undefined, operation: (ctx: AdminContext, ...args: A) => Promise<R>, run: (ctx: AdminContext, args: A) => Promise<R>): AdminOperation<A, R> {
  const wrapped = async (ctx: AdminContext, ...args: A) => {
    requireRole(ctx, role ?? "admin", operation.name || "this operation");
    return run(ctx, args);
  };
  Object.defineProperty(wrapped, "name", { value: operation.name });
  return role === undefined || role === PUBLIC_PRINCIPAL ? (wrapped as AdminOperation<A, R>) : declareRole(role, wrapped);
}

/** Declares an operation that only reads, and the role it needs. */
export function read<A extends unknown[], R>(role: Role, operation: (ctx: AdminContext, ...args: A) => Promise<R>): AdminOperation<A, R> {
  return declared(role, operation, (ctx, args) => operation(ctx, ...args));
}

/**
 * Declares an operation that changes things outside one database transaction (chain transactions, the prune
 * pass), and the role it needs: refused unless `ctx.actor` names who acts; its audit row is a mutation of its own.
 */
export function operation<A extends unknown[], R>(role: Role, op: (ctx: AdminContext, ...args: A) => Promise<R>): AdminOperation<A, R> {
  return declared(role, op, (ctx, args) => {
    requireActor(ctx.actor);
    return op(ctx, ...args);
  });
}

/**
 * Declares a mutating operation and the role it needs (PUBLIC_PRINCIPAL: the public door's, which only its
 * principal calls): refused unless `ctx.actor` names who acts, and run with its audit row as one transaction (a
 * failed audit write undoes the change). Nested mutations (apply creating projects) join the outer one. Without
 * a role it needs admin (deny by default): a helper only other operations call may leave it out.
 */
export function mutation<A extends unknown[], R>(role: Principal, operation: (ctx: AdminContext, ...args: A) => Promise<R>): AdminOperation<A, R>;
export function mutation<A extends unknown[], R>(operation: (ctx: AdminContext, ...args: A) => Promise<R>): AdminOperation<A, R>;
export function mutation<A extends unknown[], R>(
  roleOrOperation: Principal | ((ctx: AdminContext, ...args: A) => Promise<R>),
  maybeOperation?: (ctx: AdminContext, ...args: A) => Promise<R>,
): AdminOperation<A, R> {
  const [role, op] = typeof roleOrOperation === "string" ? [roleOrOperation, maybeOperation!] : [undefined, roleOrOperation];
  return declared(role, op, (ctx, args) => {
    requireActor(ctx.actor);
    return ctx.store.atomically(() => insideMutation.run(true, () => op(ctx, ...args)));
  });
}

export async function audit(ctx: AdminContext, action: string, target: string | null, before: unknown, after: unknown): Promise<void> {
  if (!insideMutation.getStore()) throw new Error(`audit(${action}) outside a mutation: declare the operation with mutation()`);
  // The public door's rows have no role (an applicant is no operator).
  await ctx.store.appendAudit({ actor: requireActor(ctx.actor), role: isRole(ctx.role) ? ctx.role : null, action, target, before: before ?? null, after: after ?? null });
}
