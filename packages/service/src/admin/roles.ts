/**
 * Operator roles (least privilege, DESIGN §11), decided here for every door that takes a principal (the admin API
 * and the console; the operator command holds the database and acts as admin):
 *
 *   viewer    reads everything an operator reads — never a secret (no key material, no webhook secret, no token)
 *   operator  viewer, and changes policy: projects, API keys, strategies and their rules, key applications,
 *             webhooks
 *   admin     operator, and what moves money or trust: gas tank credits, debits and allowances, tokens and their
 *             prices, on-chain token allowlists (and, CLI only, signers, deposits, the deposit contract, deploys,
 *             retention and prune)
 *
 * Each role includes the ones before it in ROLES. Every operation of src/admin declares the role it needs where
 * it is defined (`read(role, …)`, `mutation(role, …)`, `operation(role, …)` in context.ts); one that declares
 * none needs admin (deny by default).
 */

/** Least to most powerful: each includes every role before it. */
export const ROLES = ["viewer", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

/**
 * The principal of the public listener's doors (an applicant submitting or claiming a key application): no
 * operator at all. It may call only the operations declared for it, and none declared for a role; a context that
 * names no principal is refused everything (a door that forgot to say who acts must not act as anyone).
 */
export const PUBLIC_PRINCIPAL = "public";
/** Who acts through a door: an operator's role, or the public door's principal. */
export type Principal = Role | typeof PUBLIC_PRINCIPAL;

/** What a caller gets when it names no role: a token of the form `name=token` (what every token was before roles). */
export const DEFAULT_ROLE: Role = "admin";

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

/** Whether a principal holding `held` may do what needs `needed`. */
export function roleIncludes(held: Role, needed: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(needed);
}

/** The stronger of two roles. */
export function strongerRole(a: Role, b: Role): Role {
  return roleIncludes(a, b) ? a : b;
}

const DECLARED = Symbol("the role an operation needs");

/** A function that declares the role it needs. */
export type Declared<F> = F & { readonly [DECLARED]: Role };

/** Attaches `role` to `fn` (the wrappers of context.ts do; a route reads it back with requiredRoleOf). */
export function declareRole<F extends (...args: never[]) => unknown>(role: Role, fn: F): Declared<F> {
  return Object.defineProperty(fn, DECLARED, { value: role, enumerable: false }) as Declared<F>;
}

/** Whether `fn` declares a role at all. */
export function declaresRole(fn: unknown): boolean {
  return typeof fn === "function" && DECLARED in fn;
}

/** The role `fn` declares; admin when it declares none (deny by default). */
export function requiredRoleOf(fn: unknown): Role {
  return typeof fn === "function" && DECLARED in fn ? (fn as Declared<() => unknown>)[DECLARED] : "admin";
}

/** Why `held` may not do what needs `needed` (for a 403), else undefined. */
export function roleProblem(held: Role, needed: Role, what: string): string | undefined {
  if (roleIncludes(held, needed)) return undefined;
  return `${what} needs the ${needed} role; this principal has the ${held} role`;
}
