import type { RateLimiter } from "../../src/rateLimit.ts";
/**
 * A real service for RPC tests: two literal networks ("local" with v0.6 and v0.7, "base-sepolia" with v0.7
 * only), a SQLite store in a temp dir with a project, an active key and a revoked key, the Koa app on
 * 127.0.0.1 with a free port. No chain access: the networks have no `chain`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DestinationStream } from "pino";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, gasKindOf, type EntryPointVersion, type NetworkName } from "@paymaster/shared";
import { createApp, listen } from "../../src/app.ts";
import { DEFAULT_GAS_CAPS, type NetworkConfig, type ServiceConfig } from "../../src/config/types.ts";
import type { NetworkRuntime, ServiceContext } from "../../src/context.ts";
import { createLogger } from "../../src/log.ts";
import { METHODS } from "../../src/methods/index.ts";
import { defineMethod, type MethodDefinition } from "../../src/rpc/method.ts";
import { sponsorParamsSchema } from "../../src/wire/schemas.ts";
import { openStore } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";

/** Lowercase on purpose: the methods must answer checksummed. */
export const ADDRESSES = {
  localV06: {
    entryPoint: ENTRY_POINT_V06_ADDRESS.toLowerCase() as `0x${string}`,
    verifyingPaymaster: "0x1111111111111111111111111111111111111111",
    erc20Paymaster: "0xabcdefabcdefabcdefabcdefabcdefabcdefabcd",
  },
  localV07: {
    entryPoint: ENTRY_POINT_V07_ADDRESS.toLowerCase() as `0x${string}`,
    verifyingPaymaster: "0x2222222222222222222222222222222222222222",
    erc20Paymaster: "0xfedcbafedcbafedcbafedcbafedcbafedcbafedc",
  },
  baseSepoliaV07: {
    entryPoint: ENTRY_POINT_V07_ADDRESS.toLowerCase() as `0x${string}`,
    verifyingPaymaster: "0x3333333333333333333333333333333333333333",
    erc20Paymaster: "0x4444444444444444444444444444444444444444",
  },
} as const;

const SIGNER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const;

function network(name: NetworkName, chainId: number, entryPoints: NetworkConfig["entryPoints"]): NetworkConfig {
  return {
    name,
    chainId,
    rpcUrl: "http://127.0.0.1:1", // never called: these tests touch no chain
    gasKind: gasKindOf(name),
    entryPoints,
    signerKeys: [SIGNER_KEY],
    tokens: [],
    nativeUsdPrice: { type: "fixed", usd: "3000" },
    caps: DEFAULT_GAS_CAPS,
  };
}

export const TEST_NETWORKS: readonly NetworkConfig[] = [
  network("local", 31337, { "v0.6": ADDRESSES.localV06, "v0.7": ADDRESSES.localV07 }),
  network("base-sepolia", 84532, { "v0.7": ADDRESSES.baseSepoliaV07 }),
];

/** A network's runtime without chain access. */
export function runtimeOf(config: NetworkConfig): NetworkRuntime {
  const versions = (["v0.6", "v0.7"] as const).filter((version) => config.entryPoints[version] !== undefined);
  return { config, versions, entryPoint: (version: EntryPointVersion) => config.entryPoints[version] };
}

export interface TestService {
  url: string;
  service: ServiceContext;
  store: Store;
  /** Plaintext of an active and of a revoked key. */
  keys: { active: string; revoked: string };
  /** POST a raw body to /api/v1/paymaster/<network>?apiKey=<key> (key omitted when null). */
  post(body: string | Uint8Array, options?: { network?: string; apiKey?: string | null; query?: string }): Promise<Answer>;
  /** POST a JSON envelope. */
  call(method: string, params?: unknown, options?: { network?: string; apiKey?: string | null }): Promise<Answer>;
  close(): Promise<void>;
}

export interface Answer {
  status: number;
  text: string;
  /** The parsed body (undefined when not JSON). */
  json: any;
  headers: Headers;
}

export interface TestServiceOptions {
  methods?: readonly MethodDefinition<any>[];
  bodyLimitBytes?: number;
  logDestination?: DestinationStream;
  /** A per-key request limiter (none by default). */
  rateLimiter?: RateLimiter;
  /** A PostgreSQL database to use instead of the SQLite file (createTestDatabase). */
  databaseUrl?: string;
}

export const TEST_BODY_LIMIT = 256 * 1024;

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const dir = mkdtempSync(join(tmpdir(), "paymaster-rpc-test-"));
  const store = await openStore({ databasePath: join(dir, "store.sqlite"), databaseUrl: options.databaseUrl });
  const project = await store.createProject("rpc tests");
  const active = await store.createApiKey(project.id, "active");
  const revoked = await store.createApiKey(project.id, "revoked");
  await store.revokeApiKey(revoked.apiKey.id);

  const config: ServiceConfig = {
    host: "127.0.0.1",
    port: 0,
    databasePath: join(dir, "store.sqlite"),
    ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
    bodyLimitBytes: options.bodyLimitBytes ?? TEST_BODY_LIMIT,
    signatureTtlSeconds: 300,
    logLevel: "silent",
    networks: TEST_NETWORKS,
  };
  const service: ServiceContext = {
    config,
    store,
    networks: new Map(TEST_NETWORKS.map((config) => [config.name, runtimeOf(config)])),
    logger: options.logDestination ? createLogger("info", options.logDestination) : createLogger("silent"),
    now: () => Math.floor(Date.now() / 1000),
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
  };
  const server = await listen(createApp(service, options.methods ?? METHODS), { host: "127.0.0.1", port: 0 });

  const post: TestService["post"] = async (body, { network = "local", apiKey = active.plaintext, query } = {}) => {
    const search = query ?? (apiKey === null ? "" : `?apiKey=${encodeURIComponent(apiKey)}`);
    const response = await fetch(`${server.url}/api/v1/paymaster/${network}${search}`, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "application/json" },
      body,
    });
    return answer(response);
  };
  return {
    url: server.url,
    service,
    store,
    keys: { active: active.plaintext, revoked: revoked.plaintext },
    post,
    call: (method, params, callOptions) =>
      post(JSON.stringify(params === undefined ? { id: 1, jsonrpc: "2.0", method } : { id: 1, jsonrpc: "2.0", method, params }), callOptions),
    async close() {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** A valid v0.6 user operation (wire form). */
export function validUserOpV06(): Record<string, string> {
  return {
    sender: "0x9406Cc6185a346906296840746125a0E44976454",
    nonce: "0x0",
    initCode: "0x",
    callData: "0xb61d27f6",
    callGasLimit: "0x5208",
    verificationGasLimit: "0x186a0",
    preVerificationGas: "0xc350",
    maxFeePerGas: "0x3b9aca00",
    maxPriorityFeePerGas: "0x3b9aca00",
    signature: `0x${"ff".repeat(65)}`,
  };
}

/** A valid v0.7 user operation in the ERC-7769 names (wire form). */
export function validUserOpV07(): Record<string, string> {
  return {
    sender: "0x9406Cc6185a346906296840746125a0E44976454",
    nonce: "0x0",
    factory: "0x91e60e0613810449d098b0b5ec8b51a0fe8c8985",
    factoryData: "0x5fbfb9cf",
    callData: "0xb61d27f6",
    callGasLimit: "0x5208",
    verificationGasLimit: "0x186a0",
    preVerificationGas: "0xc350",
    maxFeePerGas: "0x3b9aca00",
    maxPriorityFeePerGas: "0x3b9aca00",
    signature: `0x${"ff".repeat(65)}`,
  };
}

/** The cost text of every envelope. */
export const COST_RE = /^\d+h\d+m\d+(\.\d{1,9})?s$/;

/**
 * A test-only method with pm_sponsorUserOperation's real params schema that answers the parsed request (its
 * bigints come out as decimal strings), so params handling is tested over HTTP without a chain. The real
 * pm_sponsorUserOperation is tested end to end against the local chain in e2e.test.ts.
 */
export const ECHO_SPONSOR_PARAMS = "test_echoSponsorParams";
export const echoSponsorMethod = defineMethod({
  name: ECHO_SPONSOR_PARAMS,
  params: sponsorParamsSchema,
  async handler(request) {
    return request;
  },
});
