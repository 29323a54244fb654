import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DeploymentManifest } from "@paymaster/contracts/manifest";

import { ConfigError } from "../src/config/errors.ts";
import { buildConfig, configFilePath, loadConfig, redactConfig, redactUrl } from "../src/config/load.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { isLoopbackHost } from "../src/config/schema.ts";
import { DEFAULT_GAS_CAPS, type ServiceConfig } from "../src/config/types.ts";

// Hardhat's well-known dev keys #1 and #2 and their addresses.
const KEY1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const ADDR1 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const KEY2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const ADDR2 = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const VPM = "0x9fa47A8D5435A5466cb484BBA6da42D451158B88";
const EPM = "0x4C48baE99f5d4dA1e9E57dA5805FFC0528208feC";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const FEED = "0x4aDC67696bA383F43DD60A9e78F2C97Fbbfc7cb1";
const EP06 = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789";
const EP07 = "0x0000000071727De22E5E9d8BAf0edAc6f37da032";

/** A valid configuration document (as parsed JSON). */
function validDoc(): Record<string, any> {
  return {
    port: 8080,
    networks: [
      {
        name: "base-sepolia",
        chainId: 84532,
        rpcUrl: "https://base-sepolia.example.org/v2/SECRETPATHKEY?key=SECRETQUERY",
        entryPoints: {
          "v0.6": { verifyingPaymaster: VPM.toLowerCase(), erc20Paymaster: EPM },
          "v0.7": { entryPoint: EP07, verifyingPaymaster: VPM, erc20Paymaster: EPM },
        },
        tokens: [
          { symbol: "USDC", address: USDC.toLowerCase(), decimals: 6, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 500 },
          {
            symbol: "WETH",
            address: ADDR2,
            decimals: 18,
            priceSource: { type: "chainlink", feed: FEED, maxAgeSeconds: 3600 },
            markupBps: 0,
          },
        ],
        nativeUsdPrice: { type: "chainlink", feed: FEED },
        caps: { maxCallGasLimit: "7000000", maxVerificationGasLimit: 900000, maxFeeMultiplierBps: 20000 },
      },
    ],
  };
}

const KEYS_ENV = { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `${KEY1}, ${KEY2}` };

/** The ConfigError `fn` throws. */
function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

/** The issues for `doc` + `env`. */
function issuesOf(doc: unknown, env: NodeJS.ProcessEnv = KEYS_ENV): readonly string[] {
  return refusal(() => buildConfig(doc, env)).issues;
}

/** Asserts that exactly one issue starts with `field` (path and origin) and matches `pattern`. */
function expectIssue(issues: readonly string[], field: string, pattern: RegExp): void {
  const matching = issues.filter((i) => i.startsWith(`${field}:`) || i.startsWith(`${field} (from`));
  expect(matching, `issues: ${issues.join("\n")}`).to.have.length(1);
  expect(matching[0]).to.match(pattern);
}

function mutate(fn: (doc: Record<string, any>) => void): Record<string, any> {
  const doc = validDoc();
  fn(doc);
  return doc;
}

describe("configuration", () => {
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-config-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function writeDoc(doc: unknown, name = "paymaster.json"): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify(doc));
    return file;
  }

  describe("finding the file", () => {
    it("no --config and no PAYMASTER_CONFIG: undefined (embedded stack)", async () => {
      expect(await loadConfig({ argv: [], env: {} })).to.equal(undefined);
      expect(await loadConfig({ argv: ["--verbose"], env: { PAYMASTER_CONFIG: "" } })).to.equal(undefined);
    });

    it("--config <path>, --config=<path>, PAYMASTER_CONFIG; --config wins", async () => {
      const a = writeDoc(validDoc(), "a.json");
      const b = writeDoc({ ...validDoc(), port: 9090 }, "b.json");
      expect((await loadConfig({ argv: ["--config", a], env: { ...KEYS_ENV, PAYMASTER_CONFIG: b } }))?.port).to.equal(8080);
      expect((await loadConfig({ argv: [`--config=${b}`], env: KEYS_ENV }))?.port).to.equal(9090);
      expect((await loadConfig({ argv: [], env: { ...KEYS_ENV, PAYMASTER_CONFIG: b } }))?.port).to.equal(9090);
      expect(configFilePath(["--config", "rel/x.json"], {})).to.equal(path.resolve("rel/x.json"));
    });

    it("--config without a path, a missing file, or non-JSON is refused", async () => {
      expect(refusal(() => configFilePath(["--config"], {})).message).to.match(/--config: needs a file path/);
      expect(refusal(() => configFilePath(["--config", "--port"], {})).message).to.match(/--config/);
      const missing = path.join(dir, "missing.json");
      const e1 = await loadConfig({ argv: ["--config", missing], env: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(e1).to.be.instanceOf(ConfigError);
      expect((e1 as Error).message).to.include(missing).and.match(/cannot read/);
      const bad = path.join(dir, "bad.json");
      fs.writeFileSync(bad, "{ port: 1 ");
      const e2 = await loadConfig({ argv: ["--config", bad], env: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(e2).to.be.instanceOf(ConfigError);
      expect((e2 as Error).message).to.match(/not valid JSON/);
    });
  });

  describe("a valid file", () => {
    it("is normalised, defaulted and typed", async () => {
      const file = writeDoc(validDoc());
      const config = (await loadConfig({ argv: ["--config", file], env: KEYS_ENV })) as ServiceConfig;
      expect(config.host).to.equal("127.0.0.1");
      expect(config.port).to.equal(8080);
      expect(config.databasePath, "the default is relative to the file's directory").to.equal(path.join(path.dirname(file), ".data/paymaster.sqlite"));
      expect(config.bodyLimitBytes).to.equal(262_144);
      expect(config.signatureTtlSeconds).to.equal(300);
      expect(config.logLevel).to.equal("info");
      expect(config.networks).to.have.length(1);
      const n = config.networks[0]!;
      expect(n.name).to.equal("base-sepolia");
      expect(n.chainId).to.equal(84532);
      expect(n.rpcUrl).to.equal(validDoc().networks[0].rpcUrl);
      expect(n.gasKind).to.equal("op-stack"); // the registry's kind for base-sepolia
      expect(n.entryPoints).to.deep.equal({
        "v0.6": { entryPoint: EP06, verifyingPaymaster: VPM, erc20Paymaster: EPM }, // canonical default, checksummed
        "v0.7": { entryPoint: EP07, verifyingPaymaster: VPM, erc20Paymaster: EPM },
      });
      expect(n.signerKeys).to.deep.equal([KEY1, KEY2]);
      expect(n.tokens).to.deep.equal([
        { symbol: "USDC", address: USDC, decimals: 6, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 500 },
        { symbol: "WETH", address: ADDR2, decimals: 18, priceSource: { type: "chainlink", feed: FEED, maxAgeSeconds: 3600 }, markupBps: 0 },
      ]);
      expect(n.nativeUsdPrice).to.deep.equal({ type: "chainlink", feed: FEED });
      expect(n.caps).to.deep.equal({
        ...DEFAULT_GAS_CAPS,
        maxCallGasLimit: 7_000_000n,
        maxVerificationGasLimit: 900_000n,
        maxFeeMultiplierBps: 20_000,
      });
    });

    it("missing chainId, tokens and caps take the registry's id, [] and DEFAULT_GAS_CAPS", () => {
      const doc = mutate((d) => {
        delete d.networks[0].chainId;
        delete d.networks[0].tokens;
        delete d.networks[0].caps;
        d.networks[0].name = "local";
      });
      const n = buildConfig(doc, { PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS: KEY1 }).networks[0]!;
      expect(n.chainId).to.equal(31337);
      expect(n.tokens).to.deep.equal([]);
      expect(n.caps).to.deep.equal(DEFAULT_GAS_CAPS);
    });

    it("large caps as decimal strings stay exact", () => {
      const doc = mutate((d) => (d.networks[0].caps = { maxCallGasLimit: "123456789012345678901234567890" }));
      expect(buildConfig(doc, KEYS_ENV).networks[0]!.caps.maxCallGasLimit).to.equal(123456789012345678901234567890n);
    });

    it("environment overrides win over the file", () => {
      const config = buildConfig(validDoc(), {
        ...KEYS_ENV,
        PAYMASTER_HOST: "::1",
        PAYMASTER_PORT: "4000",
        PAYMASTER_DB_PATH: "state/pm.sqlite",
        PAYMASTER_LOG_LEVEL: "debug",
        PAYMASTER_BODY_LIMIT_BYTES: "65536",
        PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL: "wss://other.example.org/ws",
        PAYMASTER_NETWORK_BASE_MAINNET_RPC_URL: "https://ignored.example.org", // a known network this file does not configure
      });
      expect(config).to.deep.include({
        host: "::1",
        port: 4000,
        databasePath: path.resolve("state/pm.sqlite"),
        logLevel: "debug",
        bodyLimitBytes: 65_536,
      });
      expect(config.networks[0]!.rpcUrl).to.equal("wss://other.example.org/ws");
      expect(config.networks).to.have.length(1);
    });

    it("reads signer keys from PAYMASTER_NETWORK_<NAME>_SIGNER_KEY_FILE (one per line, # comments)", () => {
      const keyFile = path.join(dir, "keys.txt");
      fs.writeFileSync(keyFile, `# paymaster signers\n${KEY2}\n\n  ${KEY1}  \r\n`);
      const config = buildConfig(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE: keyFile });
      expect(config.networks[0]!.signerKeys).to.deep.equal([KEY2, KEY1]);
    });

    it("the result is deeply frozen", () => {
      const config = buildConfig(validDoc(), KEYS_ENV);
      const n = config.networks[0]!;
      for (const part of [config, config.networks, n, n.entryPoints, n.entryPoints["v0.6"], n.signerKeys, n.tokens, n.tokens[0], n.tokens[0]!.priceSource, n.caps, n.nativeUsdPrice]) {
        expect(Object.isFrozen(part)).to.equal(true);
      }
      expect(() => {
        (config as { port: number }).port = 1;
      }).to.throw(TypeError);
      expect(() => (n.signerKeys as string[]).push(KEY1)).to.throw(TypeError);
      expect(config.port).to.equal(8080);
    });
  });

  describe("refusals name the field", () => {
    it("collects every issue, not just the first", () => {
      const issues = issuesOf(
        mutate((d) => {
          d.port = 70_000;
          d.logLevel = "loud";
          d.networks[0].tokens[0].decimals = 99;
        }),
      );
      expect(issues).to.have.length(3);
      expectIssue(issues, "port", /from 0 to 65535/);
      expectIssue(issues, "logLevel", /must be one of: fatal, error, warn, info/);
      expectIssue(issues, "networks[0].tokens[0].decimals", /from 0 to 36/);
      const err = refusal(() => buildConfig(mutate((d) => (d.port = -1)), KEYS_ENV, "paymaster.json"));
      expect(err.message).to.match(/^invalid configuration \(paymaster\.json\):\n {2}- port: /);
    });

    it("webhooks: delivery settings in range, no unknown field", () => {
      const issues = issuesOf(mutate((d) => (d.webhooks = { timeoutMs: 5, maxAttempts: 0, retries: 3, retentionDays: -1 })));
      expectIssue(issues, "webhooks.retentionDays", /from 0 to 3650/);
      expectIssue(issues, "webhooks.timeoutMs", /from 100 to 60000/);
      expectIssue(issues, "webhooks.maxAttempts", /from 1 to 50/);
      expect(issues.join("\n")).to.match(/retries/);
      expect(buildConfig(mutate((d) => (d.webhooks = { enabled: false, pollMs: 200 })), KEYS_ENV).webhooks).to.deep.equal({ enabled: false, pollMs: 200 });
    });

    it("retention and the per-endpoint webhook share: in range, no unknown field", () => {
      const issues = issuesOf(mutate((d) => (d.retention = { releasedDays: -1, settledDays: 1.5, intervalMinutes: 0, keepDays: 3 })));
      expectIssue(issues, "retention.releasedDays", /from 0 to 3650/);
      expectIssue(issues, "retention.settledDays", /integer/);
      expectIssue(issues, "retention.intervalMinutes", /from 1 to 1440/);
      expect(issues.join("\n")).to.match(/keepDays/);
      expectIssue(issuesOf(mutate((d) => (d.webhooks = { perEndpointConcurrency: 0 }))), "webhooks.perEndpointConcurrency", /from 1 to 100/);
      const built = buildConfig(mutate((d) => (d.retention = { releasedDays: 2, settledDays: 400 })), KEYS_ENV);
      expect(built.retention).to.deep.equal({ releasedDays: 2, settledDays: 400 });
    });

    it("database timeouts: in range, no unknown field; they reach the redacted configuration", () => {
      const issues = issuesOf(mutate((d) => (d.database = { connectTimeoutMs: 10, queryTimeoutMs: 1.5, statementTimeoutMs: 100, poolSize: 3 })));
      expectIssue(issues, "database.connectTimeoutMs", /from 100 to 60000/);
      expectIssue(issues, "database.queryTimeoutMs", /integer/);
      expectIssue(issues, "database.statementTimeoutMs", /from 1000 to 3600000/);
      expect(issues.join("\n")).to.match(/poolSize/);
      const built = buildConfig(mutate((d) => (d.database = { connectTimeoutMs: 2000, queryTimeoutMs: 250 })), KEYS_ENV);
      expect(built.database).to.deep.equal({ connectTimeoutMs: 2000, queryTimeoutMs: 250 });
      expect(redactConfig(built).database).to.deep.equal({ connectTimeoutMs: 2000, queryTimeoutMs: 250 });
    });

    it("a host that is not loopback", () => {
      for (const host of ["0.0.0.0", "10.0.0.1", "128.0.0.1", "example.com", "::", "[::1]", "192.168.1.1"]) {
        expectIssue(issuesOf(mutate((d) => (d.host = host))), "host", /must be a loopback address/);
      }
      expectIssue(issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_HOST: "0.0.0.0" }), "host (from PAYMASTER_HOST)", /loopback/);
      for (const host of ["127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "localhost"]) {
        expect(isLoopbackHost(host), host).to.equal(true);
        expect(buildConfig(mutate((d) => (d.host = host)), KEYS_ENV).host).to.equal(host);
      }
    });

    it("ports, body limits, TTLs and log levels out of range", () => {
      expectIssue(issuesOf(mutate((d) => (d.port = 65_536))), "port", /from 0 to 65535/);
      expectIssue(issuesOf(mutate((d) => (d.port = 80.5))), "port", /integer/);
      expectIssue(issuesOf(mutate((d) => (d.port = "80"))), "port", /must be an integer/);
      expectIssue(issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_PORT: "http" }), "port (from PAYMASTER_PORT)", /integer/);
      expect(buildConfig(mutate((d) => (d.port = 0)), KEYS_ENV).port).to.equal(0);
      expectIssue(issuesOf(mutate((d) => (d.bodyLimitBytes = 10))), "bodyLimitBytes", /from 1024 to/);
      expectIssue(issuesOf(mutate((d) => (d.signatureTtlSeconds = 5))), "signatureTtlSeconds", /from 30 to 3600/);
      expectIssue(issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_LOG_LEVEL: "verbose" }), "logLevel (from PAYMASTER_LOG_LEVEL)", /one of/);
      expectIssue(issuesOf(mutate((d) => (d.databasePath = ""))), "databasePath", /must not be empty/);
    });

    it("unknown settings (typos) and a document that is not an object", () => {
      expectIssue(issuesOf(mutate((d) => (d.prot = 1))), "prot", /not a known setting/);
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].caps.maxCallGasLimt = "1"))),
        "networks[0].caps.maxCallGasLimt",
        /not a known setting/,
      );
      expect(issuesOf([])).to.deep.equal(["(config): must be a JSON object"]);
      expectIssue(issuesOf(mutate((d) => (d.networks = []))), "networks", /at least one network/);
    });

    it("network names outside the registry, chain ids that differ from it, a network twice", () => {
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].name = "mars"))),
        "networks[0].name",
        /"mars" is not a network of the registry \(ethereum-mainnet, .*base-sepolia, local\): declare a chain the registry does not list in customNetworks \(\{name, chainId, gasKind\}\)/,
      );
      expectIssue(issuesOf(mutate((d) => (d.networks[0].name = "Base_Sepolia"))), "networks[0].name", /must be a lowercase network name \(a-z, 0-9 and single hyphens/);
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].chainId = 8453))),
        "networks[0].chainId",
        /must be 84532 for base-sepolia .*not 8453/,
      );
      const twice = mutate((d) => d.networks.push(structuredClone(d.networks[0])));
      expectIssue(issuesOf(twice), "networks[1].name", /already configured by networks\[0\]/);
    });

    it('chainClock: "auto" or "wall", anything else named', () => {
      expectIssue(issuesOf(mutate((d) => (d.networks[0].chainClock = "chain"))), "networks[0].chainClock", /"auto" or "wall"/);
      expect(buildConfig(mutate((d) => (d.networks[0].chainClock = "wall")), KEYS_ENV).networks[0]!.chainClock).to.equal("wall");
    });

    describe("custom networks (a chain the registry does not list)", () => {
      const AMOY = { name: "polygon-amoy", chainId: 80002, gasKind: "l1" };
      const AMOY_ENV = { ...KEYS_ENV, PAYMASTER_NETWORK_POLYGON_AMOY_SIGNER_KEYS: KEY2 };
      /** validDoc with polygon-amoy declared and configured beside base-sepolia. */
      const withAmoy = (change: (d: Record<string, any>) => void = () => {}) =>
        mutate((d) => {
          d.customNetworks = [{ ...AMOY }];
          const { chainId: _omitted, ...rest } = structuredClone(d.networks[0]);
          d.networks.push({ ...rest, name: "polygon-amoy", rpcUrl: "https://amoy.example.org" });
          change(d);
        });

      it("declared once, served like a registry network: its chain id and gas kind resolved, its variables read", () => {
        const config = buildConfig(withAmoy((d) => delete d.networks[1].rpcUrl), { ...AMOY_ENV, PAYMASTER_NETWORK_POLYGON_AMOY_RPC_URL: "https://from-env.example.org" });
        expect(config.customNetworks).to.deep.equal([AMOY]);
        const amoy = config.networks[1]!;
        expect([amoy.name, amoy.chainId, amoy.gasKind, amoy.rpcUrl, amoy.signerKeys]).to.deep.equal(["polygon-amoy", 80002, "l1", "https://from-env.example.org", [KEY2]]);
        // gasKind may still be overridden per network; chainId may be repeated when it matches.
        const op = buildConfig(withAmoy((d) => Object.assign(d.networks[1], { gasKind: "op-stack", chainId: 80002 })), AMOY_ENV);
        expect([op.networks[1]!.gasKind, op.networks[1]!.chainId]).to.deep.equal(["op-stack", 80002]);
        expect(redactConfig(op).customNetworks).to.deep.equal([AMOY]);
      });

      it("refuses a bad declaration, naming the field", () => {
        const issues = (change: (d: Record<string, any>) => void) => issuesOf(withAmoy(change), AMOY_ENV);
        expectIssue(issues((d) => (d.customNetworks[0].name = "Polygon_Amoy")), "customNetworks[0].name", /must be a lowercase network name \(a-z, 0-9 and single hyphens, at most 64 characters, e.g. polygon-amoy\): it goes into URL paths/);
        expectIssue(issues((d) => (d.customNetworks[0].name = "my/chain")), "customNetworks[0].name", /must be a lowercase network name/);
        expectIssue(
          issues((d) => d.customNetworks.push({ name: "base-sepolia", chainId: 84532, gasKind: "op-stack" })),
          "customNetworks[1].name",
          /"base-sepolia" is a network of the registry \(chain 84532\): use it in networks without declaring it/,
        );
        expectIssue(issues((d) => delete d.customNetworks[0].chainId), "customNetworks[0].chainId", /is required for a custom network: the chain id its RPC serves \(eth_chainId\)/);
        for (const bad of [0, -1, 1.5, 2 ** 53, "80002"]) {
          expectIssue(issues((d) => (d.customNetworks[0].chainId = bad)), "customNetworks[0].chainId", /must be a positive integer/);
        }
        expectIssue(
          issues((d) => delete d.customNetworks[0].gasKind),
          "customNetworks[0].gasKind",
          /is required for a custom network: how the chain charges for L1 data, one of l1, op-stack, arbitrum, scroll/,
        );
        expectIssue(issues((d) => (d.customNetworks[0].gasKind = "polygon")), "customNetworks[0].gasKind", /must be one of: l1, op-stack, arbitrum, scroll/);
        expectIssue(issues((d) => d.customNetworks.push({ ...AMOY, chainId: 80003 })), "customNetworks[1].name", /"polygon-amoy" is already declared by customNetworks\[0\]/);
        expectIssue(issues((d) => d.customNetworks.push({ ...AMOY, name: "amoy" })), "customNetworks[1].chainId", /chain 80002 is already declared as "polygon-amoy" by customNetworks\[0\]: one name per chain/);
        expectIssue(issues((d) => (d.customNetworks[0].colour = "purple")), "customNetworks[0].colour", /not a known setting/);
        expectIssue(issues((d) => (d.customNetworks = { name: "x" })), "customNetworks", /must be an array of custom networks/);
      });

      it("refuses a network neither in the registry nor declared, a chain id other than the declared one, one chain twice", () => {
        expectIssue(
          issuesOf(withAmoy((d) => (d.networks[1].name = "polygon-amoi")), AMOY_ENV),
          "networks[1].name",
          /"polygon-amoi" is not a network of the registry \(.*\); declared: polygon-amoy: declare a chain/,
        );
        expectIssue(
          issuesOf(withAmoy((d) => (d.networks[1].chainId = 80001)), AMOY_ENV),
          "networks[1].chainId",
          /must be 80002 for polygon-amoy \(as declared in customNetworks\[0\]\), not 80001/,
        );
        expectIssue(
          issuesOf(withAmoy((d) => d.customNetworks.push({ name: "base-copy", chainId: 84532, gasKind: "op-stack" }) && (d.networks[1].name = "base-copy")), { ...KEYS_ENV, PAYMASTER_NETWORK_BASE_COPY_SIGNER_KEYS: KEY2 }),
          "networks[1].name",
          /serves chain 84532, as networks\[0\] does: one network per chain/,
        );
        // Variables of an undeclared network are a typo; a declared one's are known.
        expectIssue(issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_NETWORK_POLYGON_AMOY_RPC_URL: "https://x" }), "PAYMASTER_NETWORK_POLYGON_AMOY_RPC_URL", /names no known network/);
      });

      it("administration reads a file that declares a network before any is configured; the service does not start on it", () => {
        const doc = { customNetworks: [AMOY] };
        expect(buildConfig(doc, {}, undefined, { purpose: "admin" }).customNetworks).to.deep.equal([AMOY]);
        expect(buildConfig(doc, {}, undefined, { purpose: "admin" }).networks).to.deep.equal([]);
        expectIssue(issuesOf(doc, {}), "networks", /configure at least one network/);
      });
    });

    it("a deposit address that is the deposit contract (every transfer would be credited twice)", () => {
      expectIssue(
        issuesOf(mutate((d) => Object.assign(d.networks[0], { depositAddress: FEED, depositContract: FEED.toLowerCase() }))),
        "networks[0].depositAddress",
        /is the depositContract: a transfer to the contract already emits Deposited/,
      );
      expect(buildConfig(mutate((d) => Object.assign(d.networks[0], { depositAddress: ADDR1, depositContract: FEED })), KEYS_ENV).networks[0]).to.deep.include({ depositAddress: ADDR1, depositContract: FEED });
    });

    it("bundlerUrl: an http(s) URL, from the file or PAYMASTER_NETWORK_<NAME>_BUNDLER_URL; redacted like rpcUrl", () => {
      const issues = issuesOf(mutate((d) => (d.networks[0].bundlerUrl = "ws://secret-bundler/")));
      expectIssue(issues, "networks[0].bundlerUrl", /must be an http\(s\):\/\/ URL/);
      expect(issues.join("\n")).to.not.include("secret-bundler");
      expectIssue(issuesOf(mutate((d) => (d.networks[0].bundlerTimeoutMs = 10))), "networks[0].bundlerTimeoutMs", /from 50 to 120000/);
      const fromFile = buildConfig(mutate((d) => Object.assign(d.networks[0], { bundlerUrl: "https://bundler.example.org/v2/KEY", bundlerTimeoutMs: 5000 })), KEYS_ENV);
      expect([fromFile.networks[0]!.bundlerUrl, fromFile.networks[0]!.bundlerTimeoutMs]).to.deep.equal(["https://bundler.example.org/v2/KEY", 5000]);
      expect(redactConfig(fromFile).networks[0]!.bundlerUrl).to.equal("https://bundler.example.org/…");
      const fromEnv = buildConfig(validDoc(), { ...KEYS_ENV, PAYMASTER_NETWORK_BASE_SEPOLIA_BUNDLER_URL: "http://127.0.0.1:4337" });
      expect(fromEnv.networks[0]!.bundlerUrl).to.equal("http://127.0.0.1:4337");
      expect(buildConfig(validDoc(), KEYS_ENV).networks[0]!.bundlerUrl).to.equal(undefined);
    });

    it("rpcUrl missing or not a URL", () => {
      expectIssue(
        issuesOf(mutate((d) => delete d.networks[0].rpcUrl)),
        "networks[0].rpcUrl",
        /is required: set it in the file or in PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL/,
      );
      const issues = issuesOf(mutate((d) => (d.networks[0].rpcUrl = "ftp://secret-host/")));
      expectIssue(issues, "networks[0].rpcUrl", /http\(s\):\/\/ or ws\(s\):\/\//);
      expect(issues.join("\n")).to.not.include("secret-host");
    });

    it("gasKind: the registry's by default, the file's when given, and only a known kind", async () => {
      const overridden = (await loadConfig({ argv: ["--config", writeDoc(mutate((d) => (d.networks[0].gasKind = "l1")))], env: KEYS_ENV })) as ServiceConfig;
      expect(overridden.networks[0]!.gasKind).to.equal("l1");
      expectIssue(issuesOf(mutate((d) => (d.networks[0].gasKind = "optimism"))), "networks[0].gasKind", /must be one of: l1, op-stack, arbitrum, scroll/);
    });

    it("addresses: malformed, wrong checksum, zero", () => {
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].entryPoints["v0.6"].verifyingPaymaster = "0x1234"))),
        'networks[0].entryPoints["v0.6"].verifyingPaymaster',
        /must be an address/,
      );
      const badChecksum = `${USDC.slice(0, -1)}E`; // last hex digit upper-cased: a mixed-case address with a wrong checksum
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].tokens[0].address = badChecksum))),
        "networks[0].tokens[0].address",
        /EIP-55 checksum/,
      );
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].entryPoints["v0.7"].entryPoint = `0x${"0".repeat(40)}`))),
        'networks[0].entryPoints["v0.7"].entryPoint',
        /zero address/,
      );
      expectIssue(
        issuesOf(mutate((d) => delete d.networks[0].entryPoints["v0.7"].erc20Paymaster)),
        'networks[0].entryPoints["v0.7"].erc20Paymaster',
        /is required/,
      );
    });

    it("no EntryPoint version, or an unknown one", () => {
      expectIssue(issuesOf(mutate((d) => (d.networks[0].entryPoints = {}))), "networks[0].entryPoints", /at least one EntryPoint version/);
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].entryPoints["v0.9"] = d.networks[0].entryPoints["v0.7"]))),
        'networks[0].entryPoints["v0.9"]',
        /not a known setting/,
      );
    });

    it("signer keys: inline in the file, missing, malformed, duplicated, both sources, unreadable file", () => {
      const inline = issuesOf(mutate((d) => (d.networks[0].signerKeys = [KEY1])));
      expectIssue(
        inline,
        "networks[0].signerKeys",
        /not accepted in the configuration file: set PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS .* or PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE/,
      );
      expect(inline.join("\n")).to.not.include(KEY1.slice(2));

      expectIssue(issuesOf(validDoc(), {}), "networks[0].signerKeys", /no signer key: set PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS/);

      const shortKey = KEY1.slice(0, -2);
      const malformed = issuesOf(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `${KEY2},${shortKey}` });
      expectIssue(
        malformed,
        "networks[0].signerKeys[1] (from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS)",
        /32-byte hex private key/,
      );
      expect(malformed.join("\n")).to.not.include(shortKey.slice(2));
      const zero = issuesOf(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `0x${"0".repeat(64)}` });
      expectIssue(zero, "networks[0].signerKeys[0] (from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS)", /not a valid secp256k1/);

      expectIssue(
        issuesOf(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `${KEY1},${KEY1.toUpperCase().replace("0X", "0x")}` }),
        "networks[0].signerKeys (from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS)",
        /same key twice/,
      );

      const keyFile = path.join(dir, "k");
      fs.writeFileSync(keyFile, KEY1);
      expectIssue(
        issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE: keyFile }),
        "networks[0].signerKeys",
        /not both/,
      );
      const missing = path.join(dir, "nope.txt");
      expectIssue(
        issuesOf(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE: missing }),
        `networks[0].signerKeys (from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE (${missing}))`,
        /cannot read the key file/,
      );
      const bad = path.join(dir, "bad.txt");
      fs.writeFileSync(bad, "not-a-key\n");
      expectIssue(
        issuesOf(validDoc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE: bad }),
        `networks[0].signerKeys[0] (from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEY_FILE (${bad}))`,
        /32-byte hex/,
      );
    });

    it("PAYMASTER_NETWORK_ variables naming no known network or setting", () => {
      expectIssue(
        issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_NETWORK_BASE_SEPOLA_RPC_URL: "https://x" }),
        "PAYMASTER_NETWORK_BASE_SEPOLA_RPC_URL",
        /names no known network/,
      );
      expectIssue(
        issuesOf(validDoc(), { ...KEYS_ENV, PAYMASTER_NETWORK_BASE_SEPOLIA_RPC: "https://x" }),
        "PAYMASTER_NETWORK_BASE_SEPOLIA_RPC",
        /not a known setting/,
      );
    });

    it("tokens: decimals, markup, duplicate symbols (any case) and addresses, symbol shape", () => {
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].decimals = 37))), "networks[0].tokens[0].decimals", /0 to 36/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].decimals = -1))), "networks[0].tokens[0].decimals", /0 to 36/);
      expect(buildConfig(mutate((d) => (d.networks[0].tokens[0].decimals = 36)), KEYS_ENV).networks[0]!.tokens[0]!.decimals).to.equal(36);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[1].markupBps = 10_001))), "networks[0].tokens[1].markupBps", /0 to 10000/);
      expect(buildConfig(mutate((d) => (d.networks[0].tokens[1].markupBps = 10_000)), KEYS_ENV).networks[0]!.tokens[1]!.markupBps).to.equal(10_000);
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].tokens[1].symbol = "usdc"))),
        "networks[0].tokens[1].symbol",
        /"usdc" is already used by tokens\[0\]/,
      );
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].tokens[1].address = USDC))),
        "networks[0].tokens[1].address",
        /already listed as tokens\[0\]/,
      );
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].symbol = "US DC"))), "networks[0].tokens[0].symbol", /letters, digits/);
      // the same symbol on two networks is fine
      const two = mutate((d) => d.networks.push({ ...structuredClone(d.networks[0]), name: "local", chainId: 31337 }));
      expect(buildConfig(two, { ...KEYS_ENV, PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS: KEY1 }).networks).to.have.length(2);
    });

    it("price sources", () => {
      const at = "networks[0].tokens[0].priceSource";
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "oracle" }))), `${at}.type`, /"fixed".*"chainlink"/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "fixed", usd: 1 }))), `${at}.usd`, /decimal string/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "fixed", usd: "1e3" }))), `${at}.usd`, /decimal string/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "fixed", usd: "0.00" }))), `${at}.usd`, /greater than 0/);
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "chainlink", feed: "0xabc" }))),
        `${at}.feed`,
        /must be an address/,
      );
      expectIssue(
        issuesOf(mutate((d) => (d.networks[0].tokens[0].priceSource = { type: "chainlink", feed: FEED, maxAgeSeconds: 0 }))),
        `${at}.maxAgeSeconds`,
        /seconds/,
      );
      expectIssue(issuesOf(mutate((d) => delete d.networks[0].nativeUsdPrice)), "networks[0].nativeUsdPrice", /is required/);
    });

    it("gas caps", () => {
      const at = "networks[0].caps";
      expectIssue(issuesOf(mutate((d) => (d.networks[0].caps = { maxCallGasLimit: "12abc" }))), `${at}.maxCallGasLimit`, /positive integer/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].caps = { maxCallGasLimit: 1.5 }))), `${at}.maxCallGasLimit`, /decimal strings/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].caps = { maxCallGasLimit: 2 ** 60 }))), `${at}.maxCallGasLimit`, /decimal strings/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].caps = { maxPreVerificationGas: "0" }))), `${at}.maxPreVerificationGas`, /greater than 0/);
      expectIssue(issuesOf(mutate((d) => (d.networks[0].caps = { maxFeeMultiplierBps: 5000 }))), `${at}.maxFeeMultiplierBps`, /10000 to/);
    });
  });

  describe("redactConfig", () => {
    it("replaces keys by addresses, strips provider secrets from URLs, and stringifies", () => {
      const keyFileConfig = buildConfig(validDoc(), KEYS_ENV);
      const redacted = redactConfig(keyFileConfig);
      const json = JSON.stringify(redacted);
      for (const secret of [KEY1, KEY2, KEY1.slice(2), KEY2.slice(2), "SECRETPATHKEY", "SECRETQUERY"]) {
        expect(json).to.not.include(secret);
      }
      expect(json.toLowerCase()).to.not.include(KEY1.slice(2, 20));
      const n = redacted.networks[0]!;
      expect(n.signerAddresses).to.deep.equal([ADDR1, ADDR2]);
      expect(n.rpcUrl).to.equal("https://base-sepolia.example.org/…");
      expect(n.caps.maxCallGasLimit).to.equal("7000000");
      expect(n.tokens[0]!.address).to.equal(USDC);
      expect(redacted.port).to.equal(8080);
      expect(Object.keys(n)).to.not.include("signerKeys");
      // the original is untouched
      expect(keyFileConfig.networks[0]!.signerKeys).to.deep.equal([KEY1, KEY2]);
    });

    it("redactUrl drops userinfo, query, fragment and path", () => {
      expect(redactUrl("https://user:pass@rpc.example.org:8443/v3/abc?apikey=xyz#f")).to.equal("https://rpc.example.org:8443/…");
      expect(redactUrl("http://127.0.0.1:8545")).to.equal("http://127.0.0.1:8545");
      expect(redactUrl("not a url with secret")).to.equal("(unparseable URL)");
    });
  });

  describe("localNetworkConfig", () => {
    const manifest: DeploymentManifest = {
      schema: 1,
      network: "local",
      chainId: 31337,
      deployedAt: "2026-01-01T00:00:00.000Z",
      owner: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
      signers: [ADDR1],
      treasury: ADDR2,
      entryPoints: {
        "v0.6": { entryPoint: EP06, simpleAccountFactory: FEED, verifyingPaymaster: VPM, erc20Paymaster: EPM },
        "v0.7": { entryPoint: EP07, simpleAccountFactory: FEED, verifyingPaymaster: EPM, erc20Paymaster: VPM },
        "v0.8": { entryPoint: ADDR1, simpleAccountFactory: FEED, verifyingPaymaster: ADDR2, erc20Paymaster: USDC },
      },
      tokens: [
        { symbol: "USDC", name: "Test USDC", address: USDC, decimals: 6 },
        { symbol: "DAI", name: "Test DAI", address: ADDR2, decimals: 18 },
      ],
      gasTankDeposit: FEED,
    };

    it("builds the local network from the manifest", () => {
      const n = localNetworkConfig({ manifest, rpcUrl: "http://127.0.0.1:8545", signerKey: KEY1 });
      expect(n).to.deep.equal({
        name: "local",
        chainId: 31337,
        rpcUrl: "http://127.0.0.1:8545",
        gasKind: "l1",
        rpcTimeoutMs: 10_000, // the local chain is waited for (LOCAL_RPC_TIMEOUT_MS)
        rpcDeadlineMs: 10_000,
        entryPoints: {
          "v0.6": { entryPoint: EP06, verifyingPaymaster: VPM, erc20Paymaster: EPM },
          "v0.7": { entryPoint: EP07, verifyingPaymaster: EPM, erc20Paymaster: VPM },
          "v0.8": { entryPoint: ADDR1, verifyingPaymaster: ADDR2, erc20Paymaster: USDC },
        },
        signerKeys: [KEY1],
        tokens: [
          { symbol: "USDC", address: USDC, decimals: 6, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 500 },
          { symbol: "DAI", address: ADDR2, decimals: 18, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 500 },
        ],
        nativeUsdPrice: { type: "fixed", usd: "3000.00" },
        depositContract: FEED,
        caps: DEFAULT_GAS_CAPS,
      });
      expect(Object.isFrozen(n.tokens[0])).to.equal(true);
    });

    it("refuses a signer the manifest's paymasters do not accept, or a malformed key", () => {
      expect(refusal(() => localNetworkConfig({ manifest, rpcUrl: "http://127.0.0.1:8545", signerKey: KEY2 })).message).to.include(
        ADDR2,
      );
      const bad = refusal(() => localNetworkConfig({ manifest, rpcUrl: "http://127.0.0.1:8545", signerKey: "0x1234" }));
      expect(bad.issues[0]).to.match(/^signerKeys\[0\]: must be a 32-byte hex private key/);
    });
  });
});
