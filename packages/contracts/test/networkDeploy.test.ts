// Deployment to a network that is not local (src/deploy/network.ts): a chain served over HTTP on loopback
// with a public chain id (84532, Base Sepolia's), no CREATE2 proxy until our presigned-transaction install,
// the canonical EntryPoints as a real network has them, and the deploying key as a plain Wallet.
import { spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { AbiCoder, Contract, JsonRpcProvider, Transaction, Wallet, concat, getCreateAddress, keccak256, parseEther } from "ethers";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, ENTRY_POINT_V08_ADDRESS } from "@paymaster/shared";
import { loadShippedArtifact } from "../src/deploy/aaArtifacts.ts";
import {
  CREATE2_DEPLOYER_ADDRESS,
  DEFAULT_MIN_POST_OP_GAS_LIMIT,
  DEFAULT_POST_OP_GAS,
  ENTRY_POINT_V06_SALT,
  ENTRY_POINT_V07_SALT,
  ENTRY_POINT_V08_SALT,
} from "../src/deploy/constants.ts";
import { CREATE2_PROXY_PRESIGNED_TX, CREATE2_PROXY_SIGNER, create2ProxyState, installCreate2Proxy } from "../src/deploy/create2Proxy.ts";
import { CANCUN_PROBE_INIT_CODE, CANCUN_PROBE_MARKER, cancunMissing } from "../src/deploy/cancunProbe.ts";
import { ERC20PaymasterV07__factory } from "../types/ethers-contracts/index.ts";
import {
  executeNetworkDeploy,
  paymasterDeployerAddress,
  planNetworkDeploy,
  type NetworkDeployConfig,
} from "../src/deploy/network.ts";
import { deployToNetwork } from "../src/deploy/deployToNetwork.ts";
import type { NetworkManifest } from "../src/deploy/networkOutputs.ts";
import { startLocalChain, type LocalChain } from "../src/localChain.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

const PAYMASTER_ABI = [
  "function owner() view returns (address)",
  "function pendingOwner() view returns (address)",
  "function isSigner(address) view returns (bool)",
  "function treasury() view returns (address)",
  "function isSupportedToken(address) view returns (bool)",
  "function postOpGas() view returns (uint256)",
];
const ENTRY_POINT_ABI = [
  "function balanceOf(address) view returns (uint256)",
  "function getDepositInfo(address) view returns (uint256 deposit, bool staked, uint112 stake, uint32 unstakeDelaySec, uint48 withdrawTime)",
];

interface Net {
  chain: LocalChain;
  provider: JsonRpcProvider;
  deployer: Wallet;
}

async function startNetwork(chainId: number): Promise<Net> {
  const chain = await startLocalChain({ port: 0, chainId });
  const provider = new JsonRpcProvider(chain.url, chainId, { staticNetwork: true, cacheTimeout: -1 });
  return { chain, provider, deployer: new Wallet(chain.accounts[0]!.privateKey, provider) };
}

/** What a real network has before we come: the canonical EntryPoints, through the (just installed) proxy. */
async function installEntryPoints(net: Net): Promise<void> {
  for (const [version, salt, address] of [
    ["v06", ENTRY_POINT_V06_SALT, ENTRY_POINT_V06_ADDRESS],
    ["v07", ENTRY_POINT_V07_SALT, ENTRY_POINT_V07_ADDRESS],
    ["v08", ENTRY_POINT_V08_SALT, ENTRY_POINT_V08_ADDRESS],
  ] as const) {
    if ((await net.provider.getCode(address)) !== "0x") continue;
    const tx = await net.deployer.sendTransaction({ to: CREATE2_DEPLOYER_ADDRESS, data: concat([salt, loadShippedArtifact(version, "EntryPoint").bytecode]) });
    await tx.wait();
    expect(await net.provider.getCode(address)).to.not.equal("0x");
  }
}

function configFor(net: Net, overrides: Partial<NetworkDeployConfig> = {}): NetworkDeployConfig {
  const accounts = net.chain.accounts;
  return {
    network: "base-sepolia",
    versions: ["v0.6", "v0.7", "v0.8"],
    owner: net.deployer.address as `0x${string}`,
    signers: [accounts[1]!.address],
    treasury: accounts[2]!.address,
    tokens: ["0x036CbD53842c5426634e7929541eC2318f3dCF7e"],
    depositTarget: parseEther("0.5"),
    stakeAmount: parseEther("0.1"),
    unstakeDelaySec: 86_400,
    ...overrides,
  };
}

describe("deployment to a network (CREATE2 proxy, PaymasterDeployer, plan and execute)", function () {
  this.timeout(120_000);
  let net: Net;

  before(async () => {
    net = await startNetwork(84532);
  });
  after(async () => {
    await net?.chain.close();
  });

  it("installs the CREATE2 proxy from its presigned transaction where the chain lacks it", async () => {
    const parsed = Transaction.from(CREATE2_PROXY_PRESIGNED_TX);
    expect(parsed.from).to.equal(CREATE2_PROXY_SIGNER);
    expect(parsed.chainId).to.equal(0n); // pre-EIP-155: valid on every chain
    expect(getCreateAddress({ from: CREATE2_PROXY_SIGNER, nonce: 0 })).to.equal(CREATE2_DEPLOYER_ADDRESS);
    expect(await create2ProxyState(net.provider)).to.equal("missing");
    await installCreate2Proxy(net.deployer);
    expect(await create2ProxyState(net.provider)).to.equal("present");
    await installEntryPoints(net);
  });

  it("refuses bad configuration with a message naming the field", async () => {
    const refusal = async (overrides: Partial<NetworkDeployConfig>) => {
      try {
        await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, configFor(net, overrides));
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(await refusal({ unstakeDelaySec: 3600 })).to.match(/^unstakeDelaySec: 3600 is below one day/);
    expect(await refusal({ signers: [] })).to.match(/^signers: at least one signer/);
    expect(await refusal({ treasury: "0x1234" as `0x${string}` })).to.match(/^treasury: "0x1234" is not an address/);
    expect(await refusal({ stakeAmount: 0n })).to.match(/^stakeAmount: .*must be staked/);
    expect(await refusal({ versions: [] })).to.match(/^versions:/);
  });

  it("dry run: lists every transaction with gas and cost, sends nothing", async () => {
    const nonce = await net.provider.getTransactionCount(net.deployer.address);
    const plan = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, configFor(net));
    expect(await net.provider.getTransactionCount(net.deployer.address)).to.equal(nonce);
    expect(plan.chainId).to.equal(84532);
    expect(plan.create2Proxy).to.equal("present");
    expect(plan.paymasterDeployer.state).to.equal("missing");
    expect(plan.txs.map((tx) => tx.step)).to.deep.equal([
      "deploy-paymaster-deployer",
      ...["v0.6", "v0.7", "v0.8"].flatMap(() => ["deploy-paymaster", "accept-ownership", "deploy-paymaster", "accept-ownership"]),
      "deploy-gas-tank-deposit",
      "accept-ownership",
    ]);
    expect([plan.gasTankDeposit.label, plan.gasTankDeposit.state]).to.deep.equal(["GasTankDeposit", "missing"]);
    expect(plan.paymasters.map((p) => p.label)).to.deep.equal([
      "VerifyingPaymasterV06",
      "ERC20PaymasterV06",
      "VerifyingPaymasterV07",
      "ERC20PaymasterV07",
      "VerifyingPaymasterV08",
      "ERC20PaymasterV08",
    ]);
    expect(plan.paymasters.every((p) => p.state === "missing")).to.equal(true);
    expect(plan.txs[0]!.gasIsEstimate).to.equal(true); // the proxy is there: estimated by the node
    expect(plan.feePerGas > 0n).to.equal(true);
    const values = plan.txs.reduce((sum, tx) => sum + tx.value, 0n);
    expect(values).to.equal(6n * (parseEther("0.5") + parseEther("0.1")));
    expect(plan.totalCostWei > values).to.equal(true);
  });

  it("deploys, sets up and hands over every paymaster; the approximations cover what the chain used", async () => {
    const config = configFor(net);
    const plan = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, config);
    const sent = await executeNetworkDeploy(net.deployer, plan);
    expect(sent.map((tx) => tx.step)).to.deep.equal(plan.txs.map((tx) => tx.step));
    // Where the dry run could not ask the node (the contract it calls was not there yet), its figure must
    // cover what the chain then used.
    for (const [i, tx] of sent.entries()) {
      const planned = plan.txs[i]!;
      if (process.env.DEPLOY_GAS_REPORT) console.log(`      ${tx.label}: used ${tx.gasUsed}, planned ${planned.gas}`);
      if (!planned.gasIsEstimate) expect(tx.gasUsed <= planned.gas, `${tx.label} used ${tx.gasUsed} > the plan's ${planned.gas}`).to.equal(true);
    }
    expect(plan.txs.filter((tx) => !tx.gasIsEstimate).map((tx) => tx.step)).to.include.members(["deploy-paymaster", "deploy-gas-tank-deposit", "accept-ownership"]);
    // The gas-tank deposit contract: handed over to the owner, and it takes deposits.
    const tank = new Contract(plan.gasTankDeposit.address, [...PAYMASTER_ABI, "function depositFor(address sender) payable", "event Deposited(address indexed sender, address indexed from, uint256 amount)"], net.deployer);
    expect([await tank.getFunction("owner")(), await tank.getFunction("pendingOwner")()]).to.deep.equal([net.deployer.address, "0x0000000000000000000000000000000000000000"]);
    const receipt = await (await tank.getFunction("depositFor")(config.signers[0], { value: 5n })).wait();
    const event = tank.interface.parseLog(receipt!.logs[0]!)!;
    expect([event.name, ...event.args]).to.deep.equal(["Deposited", config.signers[0], net.deployer.address, 5n]);
    expect(await net.provider.getCode(paymasterDeployerAddress())).to.not.equal("0x");
    const entryPoints = { "v0.6": ENTRY_POINT_V06_ADDRESS, "v0.7": ENTRY_POINT_V07_ADDRESS, "v0.8": ENTRY_POINT_V08_ADDRESS };
    for (const target of plan.paymasters) {
      const pm = new Contract(target.address, PAYMASTER_ABI, net.provider);
      expect(await pm.getFunction("owner")(), target.label).to.equal(net.deployer.address);
      expect(await pm.getFunction("pendingOwner")()).to.equal("0x0000000000000000000000000000000000000000");
      expect(await pm.getFunction("isSigner")(config.signers[0])).to.equal(true);
      expect(await pm.getFunction("isSigner")(paymasterDeployerAddress())).to.equal(false);
      if (target.kind === "erc20") {
        expect(await pm.getFunction("treasury")()).to.equal(config.treasury);
        expect(await pm.getFunction("isSupportedToken")(config.tokens[0])).to.equal(true);
      }
      const ep = new Contract(entryPoints[target.version], ENTRY_POINT_ABI, net.provider);
      expect(await ep.getFunction("balanceOf")(target.address)).to.equal(config.depositTarget);
      const info = await ep.getFunction("getDepositInfo")(target.address);
      expect([info.staked, info.stake, Number(info.unstakeDelaySec)]).to.deep.equal([true, config.stakeAmount, 86_400]);
    }
  });

  it("a second run finds everything and sends nothing", async () => {
    const nonce = await net.provider.getTransactionCount(net.deployer.address);
    const plan = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, configFor(net));
    expect(plan.txs).to.deep.equal([]);
    expect(plan.paymasters.every((p) => p.state === "deployed")).to.equal(true);
    expect(plan.gasTankDeposit.state).to.equal("deployed");
    expect(await executeNetworkDeploy(net.deployer, plan)).to.deep.equal([]);
    expect(await net.provider.getTransactionCount(net.deployer.address)).to.equal(nonce);
  });

  it("tops up a deposit that ran low, and only by what is missing", async () => {
    const config = configFor(net);
    const [first] = (await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, config)).paymasters;
    const pm = new Contract(first!.address, ["function withdrawTo(address to, uint256 amount)"], net.deployer);
    await (await pm.getFunction("withdrawTo")(net.deployer.address, parseEther("0.2"))).wait();
    const plan = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, config);
    expect(plan.txs.map((tx) => [tx.step, tx.value])).to.deep.equal([["top-up-deposit", parseEther("0.2")]]);
    await executeNetworkDeploy(net.deployer, plan);
    expect((await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, config)).txs).to.deep.equal([]);
  });

  it("the same key gets the same addresses on another chain whatever the owner and signers; another key does not", async () => {
    const other = await startNetwork(10);
    try {
      await installCreate2Proxy(other.deployer);
      await installEntryPoints(other);
      const here = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, configFor(net));
      const different = configFor(other, { owner: other.chain.accounts[7]!.address as `0x${string}`, signers: [other.chain.accounts[8]!.address], treasury: other.chain.accounts[9]!.address });
      const there = await planNetworkDeploy(other.provider, other.deployer.address as `0x${string}`, different);
      expect(there.paymasters.map((p) => p.address)).to.deep.equal(here.paymasters.map((p) => p.address));
      expect(there.gasTankDeposit.address).to.equal(here.gasTankDeposit.address);
      expect(there.paymasterDeployer.address).to.equal(here.paymasterDeployer.address);
      // Deployed there with another owner: the owner must accept, the plan says so.
      expect(there.notes.filter((n) => /must call acceptOwnership/.test(n))).to.have.length(7);
      await executeNetworkDeploy(other.deployer, there);
      const pm = new Contract(there.paymasters[0]!.address, PAYMASTER_ABI, other.provider);
      expect(await pm.getFunction("pendingOwner")()).to.equal(different.owner);
      expect(await pm.getFunction("isSigner")(different.signers[0])).to.equal(true);

      const squatter = new Wallet(other.chain.accounts[3]!.privateKey, other.provider);
      const theirs = await planNetworkDeploy(other.provider, squatter.address as `0x${string}`, configFor(other));
      for (const [i, target] of theirs.paymasters.entries()) expect(target.address).to.not.equal(here.paymasters[i]!.address);
      expect(theirs.gasTankDeposit.address).to.not.equal(here.gasTankDeposit.address);
    } finally {
      await other.chain.close();
    }
  });

  it("refuses when other code is at a paymaster's address", async () => {
    const fresh = await startNetwork(84532);
    try {
      await installCreate2Proxy(fresh.deployer);
      await installEntryPoints(fresh);
      const { paymasters } = await planNetworkDeploy(fresh.provider, fresh.deployer.address as `0x${string}`, configFor(fresh));
      await fresh.provider.send("hardhat_setCode", [paymasters[2]!.address, "0x6001600055"]);
      let message = "";
      try {
        await planNetworkDeploy(fresh.provider, fresh.deployer.address as `0x${string}`, configFor(fresh));
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.match(/^VerifyingPaymasterV07: other code is at its address 0x[0-9a-fA-F]{40} on chain 84532/);
    } finally {
      await fresh.chain.close();
    }
  });

  it("refuses to start without the funds for the whole plan, sending nothing", async () => {
    const fresh = await startNetwork(84532);
    try {
      await installCreate2Proxy(fresh.deployer);
      await installEntryPoints(fresh);
      const poor = Wallet.createRandom().connect(fresh.provider);
      await (await fresh.deployer.sendTransaction({ to: poor.address, value: parseEther("0.01") })).wait();
      const plan = await planNetworkDeploy(fresh.provider, poor.address as `0x${string}`, configFor(fresh, { owner: poor.address as `0x${string}` }));
      let message = "";
      try {
        await executeNetworkDeploy(poor, plan);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.match(/holds 10000000000000000 wei; the deployment needs about \d+ wei/);
      expect(await fresh.provider.getTransactionCount(poor.address)).to.equal(0);
    } finally {
      await fresh.chain.close();
    }
  });

  it("refuses a chain without the EntryPoint", async () => {
    const bare = await startNetwork(84532);
    try {
      let message = "";
      try {
        await planNetworkDeploy(bare.provider, bare.deployer.address as `0x${string}`, configFor(bare));
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.match(/^EntryPoint v0.6 is not deployed at 0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789 on chain 84532/);
    } finally {
      await bare.chain.close();
    }
  });

  it("writes the manifest, the service's network block and explorer verification input; a re-run keeps what it knew", async () => {
    const fresh = await startNetwork(84532);
    try {
      await installCreate2Proxy(fresh.deployer);
      await installEntryPoints(fresh);
      const outDir = await mkdtemp(path.join(tmpdir(), "deploy-out-"));
      const dry = await deployToNetwork(fresh.deployer, configFor(fresh), { dryRun: true, outDir });
      expect([dry.sent, dry.written, dry.manifest]).to.deep.equal([[], [], undefined]);
      const first = await deployToNetwork(fresh.deployer, configFor(fresh), { outDir });
      expect(first.written.map((file) => path.relative(outDir, file))).to.deep.equal([
        "deployment.base-sepolia.json",
        "service-network.base-sepolia.json",
        ...["VerifyingPaymasterV06", "ERC20PaymasterV06", "VerifyingPaymasterV07", "ERC20PaymasterV07", "VerifyingPaymasterV08", "ERC20PaymasterV08", "GasTankDeposit"].map(
          (name) => `verify/base-sepolia/${name}.json`,
        ),
      ]);
      const manifest = JSON.parse(await readFile(path.join(outDir, "deployment.base-sepolia.json"), "utf8")) as NetworkManifest;
      expect(manifest.chainId).to.equal(84532);
      expect(manifest.paymasters.map((p) => p.address)).to.deep.equal(dry.plan.paymasters.map((p) => p.address));
      expect(manifest.gasTankDeposit!.address).to.equal(dry.plan.gasTankDeposit.address);
      for (const p of [...manifest.paymasters, manifest.gasTankDeposit!]) {
        expect(p.codeHash).to.equal(keccak256(await fresh.provider.getCode(p.address)));
        const receipt = await fresh.provider.getTransactionReceipt(p.deployment!.txHash);
        expect(receipt!.blockNumber).to.equal(p.deployment!.blockNumber);
      }
      const block = JSON.parse(await readFile(path.join(outDir, "service-network.base-sepolia.json"), "utf8"));
      expect(block).to.deep.equal({
        name: "base-sepolia",
        chainId: 84532,
        entryPoints: {
          "v0.6": { entryPoint: ENTRY_POINT_V06_ADDRESS, verifyingPaymaster: manifest.paymasters[0]!.address, erc20Paymaster: manifest.paymasters[1]!.address },
          "v0.7": { entryPoint: ENTRY_POINT_V07_ADDRESS, verifyingPaymaster: manifest.paymasters[2]!.address, erc20Paymaster: manifest.paymasters[3]!.address },
          "v0.8": { entryPoint: ENTRY_POINT_V08_ADDRESS, verifyingPaymaster: manifest.paymasters[4]!.address, erc20Paymaster: manifest.paymasters[5]!.address },
        },
        depositContract: manifest.gasTankDeposit!.address,
      });
      const tankVerify = JSON.parse(await readFile(path.join(outDir, "verify/base-sepolia/GasTankDeposit.json"), "utf8"));
      expect(tankVerify.contractName).to.equal("project/contracts/tank/GasTankDeposit.sol:GasTankDeposit");
      expect(AbiCoder.defaultAbiCoder().decode(["address"], `0x${tankVerify.constructorArguments}`)[0]).to.equal(paymasterDeployerAddress());
      const verify = JSON.parse(await readFile(path.join(outDir, "verify/base-sepolia/ERC20PaymasterV07.json"), "utf8"));
      expect(verify.contractName).to.equal("project/contracts/v07/ERC20PaymasterV07.sol:ERC20PaymasterV07");
      expect(verify.compilerVersion).to.match(/^v0\.8\.28\+commit\.[0-9a-f]{8}$/);
      expect(Object.keys(verify.standardJsonInput.sources)).to.include("project/contracts/v07/ERC20PaymasterV07.sol");
      const [entryPoint, owner, signers, treasury, postOpGas, minPostOpGasLimit] = AbiCoder.defaultAbiCoder().decode(
        ["address", "address", "address[]", "address", "uint256", "uint256"],
        `0x${verify.constructorArguments}`,
      );
      expect([entryPoint, owner, signers.length, treasury, postOpGas, minPostOpGasLimit]).to.deep.equal([
        ENTRY_POINT_V07_ADDRESS,
        paymasterDeployerAddress(),
        0,
        paymasterDeployerAddress(),
        DEFAULT_POST_OP_GAS["v0.7"],
        DEFAULT_MIN_POST_OP_GAS_LIMIT,
      ]);

      const again = await deployToNetwork(fresh.deployer, configFor(fresh), { outDir });
      expect(again.sent).to.deep.equal([]);
      expect(again.manifest!.paymasters.map((p) => p.deployment)).to.deep.equal(manifest.paymasters.map((p) => p.deployment));
      expect(again.manifest!.gasTankDeposit!.deployment).to.deep.equal(manifest.gasTankDeposit!.deployment);
    } finally {
      await fresh.chain.close();
    }
  });

  it("a deployment killed halfway (SIGKILL) finishes on the next run without duplicating anything", async () => {
    const fresh = await startNetwork(84532);
    try {
      await installCreate2Proxy(fresh.deployer);
      await installEntryPoints(fresh);
      const script = path.join(here, "..", "test-fixtures", "deployChild.ts");
      const env = { ...process.env, DEPLOY_RPC_URL: fresh.chain.url, DEPLOY_KEY: fresh.chain.accounts[0]!.privateKey, DEPLOY_SIGNER: fresh.chain.accounts[1]!.address, DEPLOY_TREASURY: fresh.chain.accounts[2]!.address };
      // Killed right after its second transaction is mined (the first paymaster), mid-plan.
      const lines = await new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", script], { env, stdio: ["ignore", "pipe", "inherit"] });
        const seen: string[] = [];
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          for (const line of chunk.split("\n").filter(Boolean)) {
            seen.push(line);
            if (seen.filter((l) => l.startsWith("sent ")).length === 2) child.kill("SIGKILL");
          }
        });
        child.on("exit", () => {
          clearTimeout(timer);
          resolve(seen);
        });
        child.on("error", reject);
      });
      expect(lines.filter((l) => l.startsWith("sent "))).to.have.length(2);
      const resumed = await planNetworkDeploy(fresh.provider, fresh.deployer.address as `0x${string}`, configFor(fresh));
      expect(resumed.paymasterDeployer.state).to.equal("deployed");
      expect(resumed.paymasters.filter((p) => p.state === "deployed").length >= 1).to.equal(true);
      expect(resumed.txs.filter((tx) => tx.step === "deploy-paymaster-deployer")).to.deep.equal([]);
      await executeNetworkDeploy(fresh.deployer, resumed);
      const final = await planNetworkDeploy(fresh.provider, fresh.deployer.address as `0x${string}`, configFor(fresh));
      expect(final.txs).to.deep.equal([]);
      for (const target of final.paymasters) {
        const ep = new Contract(target.entryPoint, ENTRY_POINT_ABI, fresh.provider);
        expect(await ep.getFunction("balanceOf")(target.address), target.label).to.equal(parseEther("0.5")); // deposited once
      }
    } finally {
      await fresh.chain.close();
    }
  });
});

// Audit 2, N-6 and issue 22 item 4: the dry run (planNetworkDeploy) and the install find what makes the CREATE2
// proxy's install impossible before anything is sent, so no ether is stranded with its one-time signer.
describe("deployment to a network: a CREATE2 proxy that cannot be installed is refused before anything is sent (audit 2, N-6)", function () {
  this.timeout(120_000);
  let net: Net;
  let clean: string;

  before(async () => {
    net = await startNetwork(84532);
    // The EntryPoints' code at their canonical addresses (the plan checks them first); no CREATE2 proxy.
    for (const [version, address] of [["v06", ENTRY_POINT_V06_ADDRESS], ["v07", ENTRY_POINT_V07_ADDRESS], ["v08", ENTRY_POINT_V08_ADDRESS]] as const) {
      await net.provider.send("hardhat_setCode", [address, loadShippedArtifact(version, "EntryPoint").deployedBytecode]);
    }
    clean = await net.provider.send("evm_snapshot", []);
  });
  afterEach(async () => {
    await net.provider.send("evm_revert", [clean]);
    clean = await net.provider.send("evm_snapshot", []);
  });
  after(async () => {
    await net?.chain.close();
  });

  /** The plan's refusal message and the proof nothing was sent (deployer nonce, signer balance unchanged). */
  async function refusedBeforeSending(provider: JsonRpcProvider, deployer: Wallet): Promise<string> {
    const nonce = await provider.getTransactionCount(deployer.address);
    let message = "accepted";
    try {
      await planNetworkDeploy(provider, deployer.address as `0x${string}`, configFor(net));
    } catch (error) {
      message = (error as Error).message;
    }
    let installMessage = "installed";
    try {
      await installCreate2Proxy(deployer);
    } catch (error) {
      installMessage = (error as Error).message;
    }
    expect(installMessage, "the install refuses for the same reason").to.equal(message);
    expect(await provider.getTransactionCount(deployer.address), "nothing sent").to.equal(nonce);
    expect(await provider.getBalance(CREATE2_PROXY_SIGNER), "the one-time signer was not funded").to.equal(0n);
    expect(await create2ProxyState(provider)).to.equal("missing");
    return message;
  }

  it("the proxy's address already has a non-zero nonce", async () => {
    await net.provider.send("hardhat_setNonce", [CREATE2_DEPLOYER_ADDRESS, "0x1"]);
    expect(await refusedBeforeSending(net.provider, net.deployer)).to.match(
      /^the CREATE2 deployer proxy 0x4e59b44847b379578588920cA78FbF26c0B4956C is missing on this chain and cannot be installed from its presigned transaction: the proxy's address .* already has nonce 1 .*Nothing was sent\./,
    );
  });

  it("the one-time signer's nonce 0 is spent", async () => {
    await net.provider.send("hardhat_setNonce", [CREATE2_PROXY_SIGNER, "0x1"]);
    expect(await refusedBeforeSending(net.provider, net.deployer)).to.match(/one-time signer 0x3fAB184622Dc19b6109349B94811493BF2a45362 has already used nonce 0/);
  });

  it("the base fee is above the presigned 100 gwei", async () => {
    await net.provider.send("hardhat_setNextBlockBaseFeePerGas", ["0x" + (150n * 10n ** 9n).toString(16)]);
    await net.provider.send("evm_mine", []);
    expect(await refusedBeforeSending(net.provider, net.deployer)).to.match(/the base fee \(150000000000 wei\) is above the 100 gwei/);
  });

  it("the node refuses unprotected (pre-EIP-155) transactions, as geth does over RPC by default", async () => {
    // A JSON-RPC relay on loopback in front of the chain that answers the presigned transaction with geth's refusal.
    const relay = await gethLikeRelay(net.chain.url);
    try {
      const provider = new JsonRpcProvider(relay.url, 84532, { staticNetwork: true, cacheTimeout: -1 });
      const deployer = new Wallet(net.chain.accounts[0]!.privateKey, provider);
      // ethers words geth's "only replay-protected (EIP-155) transactions allowed over RPC" as below.
      expect(await refusedBeforeSending(provider, deployer)).to.match(/the node refuses its presigned pre-EIP-155 transaction \(legacy pre-eip-155 transactions not supported\)\. Nothing was sent\./);
      expect(relay.refused(), "the probe reached the node").to.equal(2);
    } finally {
      await relay.close();
    }
  });

  it("an installable chain passes the probe (the node answers the unfunded offer with insufficient funds) and installs", async () => {
    const plan = await planNetworkDeploy(net.provider, net.deployer.address as `0x${string}`, configFor(net));
    expect(plan.txs[0]!.step).to.equal("install-create2-proxy");
    expect(await net.provider.getBalance(CREATE2_PROXY_SIGNER)).to.equal(0n);
    await installCreate2Proxy(net.deployer);
    expect(await create2ProxyState(net.provider)).to.equal("present");
  });
});

// Audit 3, finding 2: the contracts need Cancun (MCOPY everywhere, TSTORE/TLOAD in the ERC-20 paymasters). A chain
// with Shanghai rules is refused by the dry run and by the deployment before anything is sent; Cancun itself passes.
describe("deployment to a network: a chain older than Cancun is refused before anything is sent (audit 3, finding 2)", function () {
  this.timeout(120_000);

  async function startWithHardfork(hardfork: string): Promise<Net> {
    const chain = await startLocalChain({ port: 0, chainId: 84532, hardfork });
    const provider = new JsonRpcProvider(chain.url, 84532, { staticNetwork: true, cacheTimeout: -1 });
    return { chain, provider, deployer: new Wallet(chain.accounts[0]!.privateKey, provider) };
  }

  it("Shanghai: the ERC-20 paymaster would deploy and then fail on TLOAD; the dry run and the deployment refuse, naming Cancun, and send nothing", async () => {
    const net = await startWithHardfork("shanghai");
    try {
      // Why it matters: the paymaster's creation code runs on Shanghai, its transient storage does not.
      const paymaster = await new ERC20PaymasterV07__factory(net.deployer).deploy(ENTRY_POINT_V07_ADDRESS, net.deployer.address, [], net.deployer.address, 32_000n, 95_000n);
      await paymaster.waitForDeployment();
      expect(await net.provider.getCode(await paymaster.getAddress())).to.not.equal("0x");
      const read = { to: await paymaster.getAddress(), data: paymaster.interface.encodeFunctionData("inFlightPreCharges", [ENTRY_POINT_V07_ADDRESS]) };
      expect(await net.provider.call(read).then(() => "answered", () => "reverted"), "a read using TLOAD").to.equal("reverted");

      expect(await cancunMissing(net.provider)).to.match(/^It refused code using TSTORE, TLOAD and MCOPY: .*invalid opcode/);
      const nonce = await net.provider.getTransactionCount(net.deployer.address);
      const outDir = await mkdtemp(path.join(tmpdir(), "paymaster-shanghai-"));
      for (const dryRun of [true, false]) {
        let message = "accepted";
        try {
          await deployToNetwork(net.deployer, configFor(net), { dryRun, outDir });
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message, dryRun ? "dry run" : "deployment").to.match(
          /^chain 84532 does not run the Cancun EVM, which the contracts need \(EVM: Cancun or later: EIP-1153 transient storage, EIP-5656 MCOPY\)\. Nothing was sent\. It refused code using TSTORE, TLOAD and MCOPY: .*invalid opcode/,
        );
      }
      expect(await net.provider.getTransactionCount(net.deployer.address), "nothing sent").to.equal(nonce);
      expect(await net.provider.getCode(CREATE2_DEPLOYER_ADDRESS)).to.equal("0x");
    } finally {
      net.provider.destroy();
      await net.chain.close();
    }
  });

  it("a node error that is no verdict on the EVM (a provider's rate limit) is thrown as such, never reported as 'not Cancun'", async () => {
    const { createServer } = await import("node:http");
    // A JSON-RPC server on 127.0.0.1 answering every eth_call as a provider over its quota does (HTTP 200, -32005).
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        const { id } = JSON.parse(body) as { id: unknown };
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32005, message: "daily request count exceeded, request rate limited" } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const provider = new JsonRpcProvider(`http://127.0.0.1:${(server.address() as { port: number }).port}`, 84532, { staticNetwork: true, batchMaxCount: 1 });
    try {
      const outcome = await cancunMissing(provider).then((verdict) => `verdict: ${verdict}`, (error: Error) => `thrown: ${error.message}`);
      expect(outcome).to.match(/^thrown: the node did not answer the Cancun probe .*: daily request count exceeded, request rate limited\. Nothing was sent; try again\.$/);
    } finally {
      provider.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("Cancun: the probe answers its marker, and the deployment runs there", async () => {
    const net = await startWithHardfork("cancun");
    try {
      expect(await net.provider.call({ data: CANCUN_PROBE_INIT_CODE })).to.equal(CANCUN_PROBE_MARKER);
      expect(await cancunMissing(net.provider)).to.equal(undefined);
      await installCreate2Proxy(net.deployer);
      await installEntryPoints(net);
      const { plan, sent } = await deployToNetwork(net.deployer, configFor(net), { outDir: await mkdtemp(path.join(tmpdir(), "paymaster-cancun-")) });
      expect(sent.length).to.equal(plan.txs.length);
      const erc20 = plan.paymasters.find((p) => p.label === "ERC20PaymasterV07")!;
      expect(await ERC20PaymasterV07__factory.connect(erc20.address, net.provider).inFlightPreCharges(ENTRY_POINT_V07_ADDRESS)).to.equal(0n);
    } finally {
      net.provider.destroy();
      await net.chain.close();
    }
  });
});

/** An HTTP JSON-RPC relay on 127.0.0.1 to `target` that refuses the CREATE2 proxy's presigned transaction like geth. */
async function gethLikeRelay(target: string): Promise<{ url: string; refused: () => number; close: () => Promise<void> }> {
  const { createServer } = await import("node:http");
  let refused = 0;
  const answer = async (request: { id: unknown; method: string; params?: unknown[] }) => {
    if (request.method === "eth_sendRawTransaction" && request.params?.[0] === CREATE2_PROXY_PRESIGNED_TX) {
      refused += 1;
      return { jsonrpc: "2.0", id: request.id, error: { code: -32000, message: "only replay-protected (EIP-155) transactions allowed over RPC" } };
    }
    const response = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
    return response.json();
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const parsed = JSON.parse(body) as Parameters<typeof answer>[0] | Parameters<typeof answer>[0][];
      void (Array.isArray(parsed) ? Promise.all(parsed.map(answer)) : answer(parsed)).then((out) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(out));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, refused: () => refused, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
