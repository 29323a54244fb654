/**
 * The state of each network the running service serves, for the console's overview: the paymasters on chain
 * (deposit against the network's depositAlertWei, stake and unstake delay, signers and whether the service's
 * signer is one of them: `paymasterStatus`, the same reads as `paymaster status`, made through the service's own
 * chain client so that they fail over and are counted like its other calls), the settlement watcher's
 * cursor against the chain head, and whether the network is ready. A network whose RPC does not answer is
 * reported with its problem, never as a failure of the whole answer. RPC URLs (they may carry API keys) are
 * never part of it.
 */
import { ChainRpcProvider } from "../chain/ethersProvider.ts";
import { redactUrl } from "../text/redactUrl.ts";
import { DEFAULT_WATCHER_LAG_BLOCKS } from "../settlement/leader.ts";
import { cursorNames, WATCHER_DEFAULTS } from "../settlement/watcher.ts";
import { oneLine, serviceChainTarget } from "./chainTarget.ts";
import { read, runningService, type AdminContext } from "./context.ts";
import { paymasterStatus, type PaymasterStatus } from "./paymasters.ts";

/** ERC-7562's MIN_UNSTAKE_DELAY: bundlers treat a paymaster staked for less as unstaked. */
export const MIN_UNSTAKE_DELAY_SEC = 86_400;

export interface NetworkStatus {
  network: string;
  chainId: number;
  /** What /ready says of the network: initialised, an RPC upstream up, its signer signing. */
  ready: boolean;
  /** What keeps it from being ready, in the operator's words (a token's CKR code and library included); null when ready. */
  problem: string | null;
  /** The service's signer (the first signer key). */
  signer: string | null;
  thresholds: { depositAlertWei: string | null; minUnstakeDelaySec: number; watcherLagBlocks: number };
  watcher: { cursorBlock: string | null; headBlock: string | null; lagBlocks: string | null; confirmations: number };
  paymasters: PaymasterStatus[];
  /** Why the chain could not be read (the rest of the answer then holds what the store knows). */
  error: string | null;
}

/** The service's configured networks (what network fields accept). */
export const serviceInfo = read("viewer", async function serviceInfo(ctx: AdminContext) {
  return { networks: ctx.networks };
});

export const networkStatus = read("viewer", async function networkStatus(ctx: AdminContext): Promise<NetworkStatus[]> {
  const service = runningService(ctx);
  const lagAlert = service.config.alerts?.watcherLagBlocks ?? DEFAULT_WATCHER_LAG_BLOCKS;
  return Promise.all(
    [...service.networks.values()].map(async (runtime): Promise<NetworkStatus> => {
      const config = runtime.config;
      const cursor = await ctx.store.getCursor(cursorNames(config.name).block);
      // Through the service's own chain client (failover, timeouts, RPC metrics), the one its sponsorships use.
      const rpc = runtime.chain?.rpc ?? runtime.rpc;
      // A token signer already running knows its address: the token is not opened a second time for it.
      const tokenSigner = config.pkcs11 && runtime.chain ? [runtime.chain.signer.address] : undefined;
      const target = serviceChainTarget(config, rpc ? new ChainRpcProvider(rpc, config.chainId) : undefined, tokenSigner);
      const problem = runtime.problem?.() ?? (runtime.chain === undefined ? "starting" : null);
      const status: NetworkStatus = {
        network: config.name,
        chainId: config.chainId,
        ready: problem === null,
        problem,
        signer: target.serviceSigners[0] ?? null,
        thresholds: { depositAlertWei: config.depositAlertWei?.toString() ?? null, minUnstakeDelaySec: MIN_UNSTAKE_DELAY_SEC, watcherLagBlocks: lagAlert },
        watcher: { cursorBlock: cursor?.toString() ?? null, headBlock: null, lagBlocks: null, confirmations: config.confirmations ?? WATCHER_DEFAULTS.confirmations },
        paymasters: [],
        error: null,
      };
      try {
        const [head, paymasters] = await Promise.all([target.provider.getBlockNumber(), paymasterStatus(target)]);
        status.watcher.headBlock = String(head);
        if (cursor !== undefined) status.watcher.lagBlocks = (BigInt(head) > cursor ? BigInt(head) - cursor : 0n).toString();
        status.paymasters = paymasters.map((p) =>
          p.staked && p.unstakeDelaySec < MIN_UNSTAKE_DELAY_SEC
            ? { ...p, warnings: [...p.warnings, `unstake delay ${p.unstakeDelaySec} s is below ${MIN_UNSTAKE_DELAY_SEC} s: bundlers treat it as unstaked`] }
            : p,
        );
      } catch (error) {
        // The URL may carry an API key: only its redacted form may appear.
        status.error = `the RPC of ${config.name} (${redactUrl(config.rpcUrl)}) could not be read: ${oneLine(error).split(config.rpcUrl).join(redactUrl(config.rpcUrl))}`;
      } finally {
        target.close();
      }
      return status;
    }),
  );
});
