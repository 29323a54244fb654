/**
 * The ERC-20 paymasters' token allowlist, as an operator manages it after deploying: which tokens each allows
 * (the network's configured tokens, or one given), and allowing or disallowing one (owner key). `paymaster
 * deploy` allows only the tokens configured when it runs; a token configured later fails every op on chain
 * (UnsupportedToken) until it is allowed here. The CLI (`paymaster token`) and the admin API (the running
 * service's networks; audited) call these.
 */
import { Contract, Interface, Wallet } from "ethers";
import { getAddress, isAddress } from "viem";
import type { Address } from "@paymaster/shared";
import { ChainRpcProvider } from "../chain/ethersProvider.ts";
import { AdminError, audit, knownNetwork, operation, read, runningService, type AdminContext, mutation } from "./context.ts";
import { keyFromEnv, selectPaymasters, serviceChainTarget, type ChainTarget } from "./chainTarget.ts";
import { send, type SentChange } from "./paymasters.ts";

const TOKEN_ALLOWLIST = new Interface([
  "function isSupportedToken(address) view returns (bool)",
  "function setTokenSupport(address token, bool supported)",
]);

export interface TokenRef {
  /** The configured symbol, or null for an address the configuration does not list. */
  symbol: string | null;
  address: Address;
}

export interface TokenSupportRow {
  paymaster: string;
  paymasterAddress: Address;
  symbol: string | null;
  token: Address;
  allowed: boolean;
}

/** A configured token's symbol (any case) or an address, else INVALID_INPUT naming the configured symbols. */
export function resolveToken(target: ChainTarget, value: string): TokenRef {
  const configured = target.config?.tokens ?? [];
  const bySymbol = configured.find((t) => t.symbol.toLowerCase() === value.toLowerCase());
  if (bySymbol) return { symbol: bySymbol.symbol, address: getAddress(bySymbol.address) };
  if (isAddress(value, { strict: false })) {
    const address = getAddress(value);
    return { symbol: configured.find((t) => t.address.toLowerCase() === address.toLowerCase())?.symbol ?? null, address };
  }
  const known = configured.map((t) => t.symbol).join(", ");
  throw new AdminError("INVALID_INPUT", `token "${value}": not a configured token of ${target.network}${known ? ` (${known})` : ""} nor an address`);
}

/** The ERC-20 paymasters among the selected ones (NOT_FOUND when there is none). */
function erc20Paymasters(target: ChainTarget, paymaster?: string) {
  const found = selectPaymasters(target, paymaster).filter((p) => p.kind === "erc20");
  if (found.length === 0) throw new AdminError("NOT_FOUND", `${paymaster ? `--paymaster ${paymaster}` : target.network}: no ERC-20 paymaster`);
  return found;
}

/** Whether each ERC-20 paymaster allows each token (default: the network's configured tokens). */
export async function listTokenSupport(target: ChainTarget, options: { paymaster?: string; tokens?: readonly TokenRef[] } = {}): Promise<TokenSupportRow[]> {
  const tokens = options.tokens ?? (target.config?.tokens ?? []).map((t) => ({ symbol: t.symbol, address: getAddress(t.address) }));
  const rows = await Promise.all(
    erc20Paymasters(target, options.paymaster).flatMap((p) => {
      const pm = new Contract(p.address, TOKEN_ALLOWLIST, target.provider);
      return tokens.map(async (t): Promise<TokenSupportRow> => ({
        paymaster: p.label,
        paymasterAddress: p.address,
        symbol: t.symbol,
        token: t.address,
        allowed: (await pm.getFunction("isSupportedToken")(t.address)) as boolean,
      }));
    }),
  );
  return rows;
}

/** Allows (`allow`) or disallows `token` on each selected ERC-20 paymaster where it is not already so (owner key). */
export async function setTokenSupport(target: ChainTarget, owner: Wallet, options: { token: TokenRef; allow: boolean; paymaster?: string }): Promise<SentChange[]> {
  const sent: SentChange[] = [];
  const name = options.token.symbol ?? options.token.address;
  for (const p of erc20Paymasters(target, options.paymaster)) {
    const pm = new Contract(p.address, TOKEN_ALLOWLIST, owner);
    if (((await pm.getFunction("isSupportedToken")(options.token.address)) as boolean) === options.allow) continue;
    sent.push(await send(p.label, `${options.allow ? "allow" : "disallow"} ${name}`, pm.getFunction("setTokenSupport")(options.token.address, options.allow)));
  }
  return sent;
}

// ---- the admin API: a network the running service serves, through its own chain client

/** Runs `body` on the chain target of a network the running service serves. */
async function onServiceNetwork<T>(ctx: AdminContext, network: unknown, body: (target: ChainTarget) => Promise<T>): Promise<T> {
  const service = runningService(ctx);
  const runtime = service.networks.get(knownNetwork(ctx, network))!;
  const rpc = runtime.chain?.rpc ?? runtime.rpc;
  const target = serviceChainTarget(runtime.config, rpc ? new ChainRpcProvider(rpc, runtime.config.chainId) : undefined);
  try {
    return await body(target);
  } finally {
    target.close();
  }
}

/** The configured tokens' state on the network's ERC-20 paymasters (GET …/networks/:network/tokens). */
export const serviceTokenSupport = read("viewer", function serviceTokenSupport(ctx: AdminContext, network: unknown): Promise<TokenSupportRow[]> {
  return onServiceNetwork(ctx, network, (target) => listTokenSupport(target));
});

/**
 * Allows or disallows a token on the network's ERC-20 paymasters from the running service. It needs the owner's
 * key in the service's environment (PAYMASTER_OWNER_KEY[_FILE]); without it the answer says to run the CLI where
 * the key is. Audited as token.allow / token.disallow with the allowlist before and after.
 */
export const serviceSetTokenSupport = operation("admin", async function serviceSetTokenSupport(
  ctx: AdminContext,
  network: unknown,
  token: unknown,
  allow: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ network: string; token: TokenRef; sent: SentChange[]; support: TokenSupportRow[] }> {
  // operation(): the actor and the role are checked before anything is sent on chain.
  return onServiceNetwork(ctx, network, async (target) => {
    if (typeof token !== "string" || token === "") throw new AdminError("INVALID_INPUT", "token: a configured symbol or an address");
    const ref = resolveToken(target, token);
    const key = keyFromEnv(env, "PAYMASTER_OWNER_KEY");
    if (key === undefined) {
      throw new AdminError(
        "UNAVAILABLE",
        `the service holds no owner key (PAYMASTER_OWNER_KEY): run \`paymaster token ${allow ? "allow" : "disallow"} ${ref.symbol ?? ref.address} --network ${target.network}\` where the paymasters' owner key is`,
      );
    }
    const before = await listTokenSupport(target, { tokens: [ref] });
    const sent = await setTokenSupport(target, new Wallet(key, target.provider), { token: ref, allow });
    const support = await listTokenSupport(target, { tokens: [ref] });
    await recordTokenChange(ctx, allow ? "token.allow" : "token.disallow", `${target.network}:${ref.symbol ?? ref.address}`, before, { support, sent });
    return { network: target.network, token: ref, sent, support };
  });
});

/** The audit row of an on-chain allowlist change, written after its transactions (a chain change cannot share a database transaction). */
const recordTokenChange = mutation("admin", async function recordTokenChange(ctx: AdminContext, action: string, target: string, before: unknown, after: unknown): Promise<void> {
  await audit(ctx, action, target, before, after);
});
