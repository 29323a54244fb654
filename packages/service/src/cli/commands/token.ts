/**
 * paymaster token list | allow | disallow
 * The ERC-20 paymasters' token allowlist (src/admin/tokens.ts): which configured tokens each allows, and allowing
 * a token configured after the deployment (owner key from PAYMASTER_OWNER_KEY[_FILE], else the deployer's).
 */
import type { Command } from "commander";
import type { listTokenSupport } from "../../admin/tokens.ts";
import { table } from "../output.ts";
import type { RunChain } from "../run.ts";
import { onChain, withNetwork } from "./chain.ts";

type TokenOpts = { network: string; deployments?: string; paymaster?: string };


const supportText = (rows: Awaited<ReturnType<typeof listTokenSupport>>) =>
  table(rows.map((r) => ({ paymaster: r.paymaster, token: r.symbol ?? "-", address: r.token, allowed: r.allowed ? "allowed" : "NOT ALLOWED" })));

export function registerToken(program: Command, runChain: RunChain): void {
  const group = program.command("token").description("the tokens the ERC-20 paymasters accept (allow one configured after the deployment)");
  const withPaymaster = (cmd: Command) => cmd.option("--paymaster <label|address>", "only this ERC-20 paymaster (default: all of the network)");
  withPaymaster(withNetwork(group.command("list")))
    .description("whether each ERC-20 paymaster allows each configured token (or --token)")
    .option("--token <symbol|address>", "this token instead of the configured ones")
    .action((o: TokenOpts & { token?: string }) =>
      runChain(o, async (target, _env, out) => {
        const { listTokenSupport, resolveToken } = await onChain();
        const tokens = o.token === undefined ? undefined : [resolveToken(target, o.token)];
        out.print(await listTokenSupport(target, { ...(o.paymaster ? { paymaster: o.paymaster } : {}), ...(tokens ? { tokens } : {}) }), supportText);
      }),
    );
  for (const [name, allow, text] of [
    ["allow", true, "allow a token on each ERC-20 paymaster (owner key): needed before the service can take a token configured after the deployment"],
    ["disallow", false, "stop accepting a token on each ERC-20 paymaster (owner key); ops already signed with it then fail on chain"],
  ] as const) {
    withPaymaster(withNetwork(group.command(name)))
      .description(text)
      .argument("<token>", "a configured token's symbol, or an address")
      .action((token: string, o: TokenOpts) =>
        runChain(o, async (target, env, out) => {
          const { listTokenSupport, ownerWallet, resolveToken, setTokenSupport } = await onChain();
          const ref = resolveToken(target, token);
          const sent = await setTokenSupport(target, ownerWallet(target, env), { token: ref, allow, ...(o.paymaster ? { paymaster: o.paymaster } : {}) });
          const after = await listTokenSupport(target, { tokens: [ref], ...(o.paymaster ? { paymaster: o.paymaster } : {}) });
          out.print({ sent, support: after }, (r) => [r.sent.length === 0 ? `nothing to send: already ${allow ? "allowed" : "disallowed"}` : table(r.sent), supportText(r.support)].join("\n"));
        }),
      );
  }
}
