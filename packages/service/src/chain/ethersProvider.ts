/**
 * An ethers v6 provider over the service's own chain client (src/chain/rpc.ts), for the admin reads written
 * with ethers contracts (the paymasters' deposits, stake and signers in the console's network status). Through
 * it those reads fail over across the network's upstreams, keep its timeouts and show in its RPC metrics, like
 * every other call the service makes, instead of going to the primary URL alone on a client of their own.
 * The CLI, which has no running service, keeps a plain JsonRpcProvider.
 */
import { JsonRpcApiProvider, Network, type JsonRpcError, type JsonRpcPayload, type JsonRpcResult } from "ethers";
import { NodeError, type ChainRpc } from "./rpc.ts";

export class ChainRpcProvider extends JsonRpcApiProvider {
  readonly #rpc: ChainRpc;

  constructor(rpc: ChainRpc, chainId: number) {
    const network = Network.from(chainId);
    // The chain id is the configuration's, checked by the service's pre-flight: no detection call.
    super(network, { staticNetwork: network, batchMaxCount: 1, cacheTimeout: -1 });
    this.#rpc = rpc;
  }

  /** Each payload as one call of the chain client; a node's JSON-RPC error goes back to ethers as the node gave it. */
  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<(JsonRpcResult | JsonRpcError)[]> {
    const payloads = Array.isArray(payload) ? payload : [payload];
    return Promise.all(
      payloads.map(async ({ id, method, params }): Promise<JsonRpcResult | JsonRpcError> => {
        try {
          return { id, result: await this.#rpc.request(method, params as unknown[]) };
        } catch (error) {
          if (error instanceof NodeError) return { id, error: { code: error.code, message: error.message, data: error.data } };
          throw error; // no upstream answered: CHAIN_UNAVAILABLE, whose message names no URL
        }
      }),
    );
  }
}
