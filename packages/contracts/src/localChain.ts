/**
 * An in-process local chain: Hardhat 3's EDR simulated network, served over HTTP (and WebSocket) JSON-RPC
 * on a loopback address, the same way `hardhat node` serves it (Hardhat's own JSON-RPC request handler).
 *
 * Hardhat is imported lazily, so importing this module (or the package root) costs nothing until
 * `startLocalChain` is called.
 */
import { existsSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import { isIP } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { EthereumProvider } from "hardhat/types/providers";
import type { Address } from "./manifest.ts";
import { packageRoot } from "./packageRoot.ts";

export interface LocalChainOptions {
  /** TCP port; 0 picks a free one. Default 8545. */
  port?: number;
  /** Loopback address to bind: 127.x.x.x, ::1 or "localhost" (= 127.0.0.1). Default 127.0.0.1. */
  host?: string;
  /** Chain id. Default 31337. */
  chainId?: number;
  /** Log every JSON-RPC call to the console, as `hardhat node` does. Default false. */
  logging?: boolean;
  /**
   * "l1" (default: Ethereum rules, EIP-7702 type-4 transactions) or "op" (OP Stack rules: the GasPriceOracle
   * and L1Block predeploys, receipts with the L1 data fee; type-4 transactions are refused).
   */
  chainType?: "l1" | "op";
  /**
   * The EVM rules, e.g. "shanghai" to play a chain that never took Cancun (which the contracts need). Default: the
   * newest hardfork Hardhat knows for the chain type.
   */
  hardfork?: string;
}

/** A funded development account (the well-known Hardhat mnemonic: never use these keys on a real network). */
export interface LocalAccount {
  address: Address;
  privateKey: `0x${string}`;
  /** Initial balance in wei. */
  balance: bigint;
}

export interface LocalChain {
  /** HTTP JSON-RPC endpoint, e.g. http://127.0.0.1:8545 */
  url: string;
  /** WebSocket JSON-RPC endpoint on the same port (eth_subscribe works there). */
  wsUrl: string;
  host: string;
  port: number;
  chainId: number;
  /** The in-process EIP-1193 provider (no HTTP round trip). */
  provider: EthereumProvider;
  /** The default funded dev accounts (20), in order. */
  accounts: LocalAccount[];
  /** Stops the HTTP/WebSocket server and the chain. Idempotent. */
  close(): Promise<void>;
}

/** Hardhat's JSON-RPC request handler used by `hardhat node` (internal module, hardhat is pinned exactly). */
interface JsonRpcHandlerLike {
  handleHttp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  handleWs(ws: unknown): Promise<void>;
}
interface WebSocketServerLike {
  on(event: "connection", listener: (ws: unknown) => void): void;
  on(event: "error", listener: (err: Error) => void): void;
  clients: Set<{ terminate(): void }>;
  close(cb?: (err?: Error) => void): void;
}

const LOOPBACK_NAMES = new Map([["localhost", "127.0.0.1"]]);

/** Returns the address to bind, or throws unless `host` is a loopback address. */
export function loopbackHost(host: string): string {
  const mapped = LOOPBACK_NAMES.get(host.toLowerCase()) ?? host;
  const family = isIP(mapped);
  if ((family === 4 && mapped.startsWith("127.")) || (family === 6 && (mapped === "::1" || mapped === "0:0:0:0:0:0:0:1"))) {
    return mapped;
  }
  throw new Error(`startLocalChain: refusing to listen on ${host}: only loopback addresses (127.0.0.0/8, ::1) are allowed`);
}

async function importHardhatInternals(): Promise<{
  JsonRpcHandler: new (provider: EthereumProvider) => JsonRpcHandlerLike;
  WebSocketServer: new (opts: { server: http.Server }) => WebSocketServerLike;
}> {
  const require = createRequire(import.meta.url);
  const hardhatDir = path.dirname(require.resolve("hardhat/package.json"));
  const handlerFile = path.join(hardhatDir, "dist/src/internal/builtin-plugins/node/json-rpc/handler.js");
  if (!existsSync(handlerFile)) throw new Error(`startLocalChain: ${handlerFile} is missing (hardhat version changed?)`);
  const { JsonRpcHandler } = (await import(pathToFileURL(handlerFile).href)) as {
    JsonRpcHandler: new (provider: EthereumProvider) => JsonRpcHandlerLike;
  };
  // `ws` as hardhat itself resolves it (the same server stack as `hardhat node`).
  const { WebSocketServer } = createRequire(path.join(hardhatDir, "package.json"))("ws") as {
    WebSocketServer: new (opts: { server: http.Server }) => WebSocketServerLike;
  };
  return { JsonRpcHandler, WebSocketServer };
}

async function devAccounts(
  config: unknown,
): Promise<LocalAccount[]> {
  const { HDNodeWallet } = await import("ethers");
  const accounts = config as {
    mnemonic: { get(): Promise<string> };
    passphrase: { get(): Promise<string> };
    path: string;
    initialIndex: number;
    count: number;
    accountsBalance: bigint;
  };
  const root = HDNodeWallet.fromPhrase(await accounts.mnemonic.get(), await accounts.passphrase.get(), accounts.path);
  const result: LocalAccount[] = [];
  for (let i = accounts.initialIndex; i < accounts.initialIndex + accounts.count; i++) {
    const wallet = root.deriveChild(i);
    result.push({ address: wallet.address as Address, privateKey: wallet.privateKey as `0x${string}`, balance: BigInt(accounts.accountsBalance) });
  }
  return result;
}

/**
 * Starts Hardhat 3's in-process EDR chain and serves its JSON-RPC on http://host:port.
 * Port 0 picks a free port (see `url` / `port` of the result).
 */
export async function startLocalChain(options: LocalChainOptions = {}): Promise<LocalChain> {
  const host = loopbackHost(options.host ?? "127.0.0.1");
  const port = options.port ?? 8545;
  const chainId = options.chainId ?? 31337;
  const chainType = options.chainType ?? "l1";
  if (chainType !== "l1" && chainType !== "op") throw new Error(`startLocalChain: unknown chain type ${String(chainType)}`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`startLocalChain: invalid port ${port}`);
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error(`startLocalChain: invalid chain id ${chainId}`);

  const { createHardhatRuntimeEnvironment } = await import("hardhat/hre");
  const { JsonRpcHandler, WebSocketServer } = await importHardhatInternals();
  const root = packageRoot();
  const hre = await createHardhatRuntimeEnvironment(
    {
      // Our build infos (artifacts/) are loaded into EDR, so reverts of our contracts decode in traces.
      paths: { artifacts: path.join(root, "artifacts"), cache: path.join(root, "cache") },
      networks: {
        local: { type: "edr-simulated", chainType, chainId, allowUnlimitedContractSize: false, ...(options.hardfork === undefined ? {} : { hardfork: options.hardfork }) },
      },
    },
    {},
    root,
  );
  const connection = await hre.network.create({ network: "local" });
  const provider = connection.provider;
  const closeConnection = async () => {
    await connection.close();
  };
  if (options.logging === true) await provider.request({ method: "hardhat_setLoggingEnabled", params: [true] });

  let accounts: LocalAccount[];
  try {
    accounts = await devAccounts(connection.networkConfig.accounts);
  } catch (err) {
    await closeConnection();
    throw err;
  }

  const handler = new JsonRpcHandler(provider);
  const server = http.createServer();
  server.on("request", (req, res) => {
    void handler.handleHttp(req, res);
  });
  const wsServer = new WebSocketServer({ server });
  // ws re-emits the HTTP server's errors; listen errors are handled below, the rest are per connection.
  wsServer.on("error", () => {});
  wsServer.on("connection", (ws) => {
    void handler.handleWs(ws);
  });

  let bound: { port: number };
  try {
    bound = await new Promise<{ port: number }>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve(server.address() as { port: number });
      });
    });
  } catch (err) {
    wsServer.close();
    await closeConnection();
    throw new Error(`startLocalChain: cannot listen on ${host}:${port}: ${(err as Error).message}`, { cause: err });
  }

  const hostInUrl = isIP(host) === 6 ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const client of wsServer.clients) client.terminate();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
      await new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      await closeConnection();
    })();
    return closing;
  };

  return {
    url: `http://${hostInUrl}:${bound.port}`,
    wsUrl: `ws://${hostInUrl}:${bound.port}`,
    host,
    port: bound.port,
    chainId,
    provider,
    accounts,
    close,
  };
}
