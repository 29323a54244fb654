// The on-chain operator commands as real child processes (deploy, status, deposit, withdraw, stake, signer)
// against a chain served over HTTP on loopback with a public chain id (84532, serving as base-sepolia), where
// only the canonical EntryPoints exist beforehand, as on a real network. Keys come from the environment only.
import { expect } from "chai";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { BrowserProvider, parseEther } from "ethers";
import { encodeFunctionData, type Abi } from "viem";
import { GasTankDepositArtifact } from "@paymaster/contracts/artifacts";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { deployLocalStack, startLocalChain, type LocalChain } from "@paymaster/contracts";
import { runCli, type CliResult } from "./helpers/cli.ts";
import { ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";

describe("paymaster deploy / status / deposit / withdraw / stake / signer (child processes, chain 84532)", function () {
  this.timeout(240_000);
  let chain: LocalChain;
  let env: Record<string, string>;
  let deployments: string;
  const serviceKey = generatePrivateKey();
  const serviceSigner = privateKeyToAddress(serviceKey);

  before(async () => {
    chain = await startLocalChain({ port: 0, chainId: 84532 });
    // What a real network has before we come: the canonical EntryPoints (the local deployment puts them there;
    // its own paymasters are elsewhere and play no part).
    const provider = new BrowserProvider(chain.provider, chain.chainId);
    await deployLocalStack(await provider.getSigner(chain.accounts[9]!.address), { signers: [chain.accounts[9]!.address], treasury: chain.accounts[9]!.address, allowNonLocalChain: true });
    deployments = mkdtempSync(path.join(tmpdir(), "paymaster-deployments-"));
    env = {
      PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL: `${chain.url}/secret-path-key`,
      PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: serviceKey,
      PAYMASTER_DEPLOYER_KEY: chain.accounts[0]!.privateKey,
    };
  });
  after(async () => {
    await chain?.close();
  });

  const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
    runCli([...args, "--deployments", deployments], { ...env, ...extra });
  const nonce = async (address: string) => Number(await chain.provider.request({ method: "eth_getTransactionCount", params: [address, "latest"] }));
  const deployArgs = ["deploy", "--network", "base-sepolia", "--treasury", "0x000000000000000000000000000000000000dEaD", "--stake", "0.1eth", "--deposit", "0.5eth", "--versions", "v0.6,v0.7"];

  it("deploy --dry-run prints every transaction with gas and cost and sends nothing", async () => {
    const before = await nonce(chain.accounts[0]!.address);
    const r = await cli([...deployArgs, "--dry-run", "--json"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.json.dryRun).to.equal(true);
    expect(r.json.transactions.map((t: { step: string }) => t.step)).to.include.members(["deploy-paymaster-deployer", "deploy-paymaster", "accept-ownership"]);
    expect(r.json.transactions.every((t: { gas: string; costWei: string }) => BigInt(t.gas) > 0n && BigInt(t.costWei) > 0n)).to.equal(true);
    expect(r.json.written).to.deep.equal([]);
    expect(await nonce(chain.accounts[0]!.address)).to.equal(before);
    const text = await cli([...deployArgs, "--dry-run"]);
    expect(text.stdout).to.match(/^Plan \(dry run: nothing sent\) on base-sepolia \(chain 84532\)/);
  });

  it("deploy and its dry run refuse a chain older than Cancun, naming the fork, before sending anything (audit 3, finding 2)", async () => {
    const shanghai = await startLocalChain({ port: 0, chainId: 84532, hardfork: "shanghai" });
    try {
      const rpc = { PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL: `${shanghai.url}/secret-path-key` };
      for (const args of [[...deployArgs, "--dry-run"], deployArgs]) {
        const r = await cli(args, rpc);
        expect(r.code, r.stderr).to.equal(1);
        expect(r.stderr).to.match(/chain 84532 does not run the Cancun EVM, which the contracts need \(EVM: Cancun or later: EIP-1153 transient storage, EIP-5656 MCOPY\)\. Nothing was sent\. It refused code using TSTORE, TLOAD and MCOPY: .*invalid opcode/);
        expect(r.stderr).to.not.include("secret-path-key");
        expect(r.stderr).to.not.match(/\n\s+at /);
      }
      const nonce = Number(await shanghai.provider.request({ method: "eth_getTransactionCount", params: [chain.accounts[0]!.address, "latest"] }));
      expect(nonce, "nothing sent").to.equal(0);
    } finally {
      await shanghai.close();
    }
  });

  it("deploy sends the plan and writes the outputs; a second run sends nothing and finds the same addresses", async () => {
    const first = await cli([...deployArgs, "--json"]);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.json.sent.length).to.equal(first.json.transactions.length);
    const files = first.json.written.map((f: string) => path.basename(f));
    expect(files).to.include.members(["deployment.base-sepolia.json", "service-network.base-sepolia.json"]);
    const block = JSON.parse(readFileSync(path.join(deployments, "service-network.base-sepolia.json"), "utf8"));
    expect(block.chainId).to.equal(84532);
    const before = await nonce(chain.accounts[0]!.address);
    const second = await cli([...deployArgs, "--json"]);
    expect(second.code, second.stderr).to.equal(0);
    expect(second.json.transactions).to.deep.equal([]);
    expect(second.json.paymasters.map((p: { address: string }) => p.address)).to.deep.equal(first.json.paymasters.map((p: { address: string }) => p.address));
    expect(await nonce(chain.accounts[0]!.address)).to.equal(before);
    // The RPC URL's secret path never reaches the output.
    expect(first.stdout + first.stderr + second.stdout).to.not.include("secret-path-key");
  });

  it("status shows deposit, stake, owner and the service's signer for every paymaster, from the manifest", async () => {
    const r = await cli(["status", "--network", "base-sepolia", "--json"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.json).to.have.length(4);
    for (const p of r.json) {
      expect([p.depositWei, p.stakeWei, p.staked, p.unstakeDelaySec, p.owner], p.label).to.deep.equal(["500000000000000000", "100000000000000000", true, 86400, chain.accounts[0]!.address]);
      expect(p.serviceSigners).to.deep.equal([{ address: serviceSigner, accepted: true }]);
      expect(p.warnings).to.deep.equal([]);
    }
    const low = await cli(["status", "--network", "base-sepolia", "--min-deposit", "1eth"]);
    expect(low.code).to.equal(0);
    expect(low.stdout).to.match(/WARNING VerifyingPaymasterV06: deposit 500000000000000000 wei is below 1000000000000000000 wei/);
  });

  it("withdraw asks for confirmation (refused without a terminal), sends with --yes; deposit tops up again", async () => {
    const refused = await cli(["withdraw", "--network", "base-sepolia", "--paymaster", "VerifyingPaymasterV07", "--amount", "0.2eth", "--recipient", chain.accounts[4]!.address]);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.match(/not confirmed: no terminal to ask on \(give --yes\)/);
    const done = await cli(["withdraw", "--network", "base-sepolia", "--paymaster", "VerifyingPaymasterV07", "--amount", "0.2eth", "--recipient", chain.accounts[4]!.address, "--yes", "--json"]);
    expect(done.code, done.stderr).to.equal(0);
    const after = await cli(["status", "--network", "base-sepolia", "--paymaster", "VerifyingPaymasterV07", "--json"]);
    expect(after.json[0].depositWei).to.equal("300000000000000000");
    const topUp = await cli(["deposit", "--network", "base-sepolia", "--to", "0.5eth", "--json"]);
    expect(topUp.code, topUp.stderr).to.equal(0);
    expect(topUp.json.map((s: { paymaster: string }) => s.paymaster)).to.deep.equal(["VerifyingPaymasterV07"]);
  });

  it("stake raises the stake where it is short; below a day of unstake delay is a usage error", async () => {
    const r = await cli(["stake", "--network", "base-sepolia", "--paymaster", "ERC20PaymasterV07", "--amount", "0.15eth", "--json"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.json).to.have.length(1);
    const status = await cli(["status", "--network", "base-sepolia", "--paymaster", "ERC20PaymasterV07", "--json"]);
    expect(status.json[0].stakeWei).to.equal("150000000000000000");
    const short = await cli(["stake", "--network", "base-sepolia", "--amount", "1eth", "--unstake-delay", "3600"]);
    expect(short.code).to.equal(2);
    expect(short.stderr).to.match(/--unstake-delay: below one day/);
  });

  it("signer add, list and remove; the key the service signs with cannot be removed", async () => {
    const next = privateKeyToAddress(generatePrivateKey());
    const add = await cli(["signer", "add", "--network", "base-sepolia", "--address", next, "--json"]);
    expect(add.code, add.stderr).to.equal(0);
    expect(add.json).to.have.length(4);
    const list = await cli(["signer", "list", "--network", "base-sepolia", "--address", next, "--json"]);
    expect(list.json.every((row: { accepted: boolean }) => row.accepted)).to.equal(true);
    const again = await cli(["signer", "add", "--network", "base-sepolia", "--address", next, "--json"]);
    expect(again.json).to.deep.equal([]); // already accepted everywhere: nothing sent
    const remove = await cli(["signer", "remove", "--network", "base-sepolia", "--address", next, "--json"]);
    expect(remove.code, remove.stderr).to.equal(0);
    expect((await cli(["signer", "list", "--network", "base-sepolia", "--address", next, "--json"])).json.some((row: { accepted: boolean }) => row.accepted)).to.equal(false);
    const current = await cli(["signer", "remove", "--network", "base-sepolia", "--address", serviceSigner]);
    expect(current.code).to.equal(2);
    expect(current.stderr).to.match(/is the key the service signs with for base-sepolia/);
  });

  it("deposit-contract show and withdraw: what users paid into their tanks, taken out by the owner after confirmation", async () => {
    const manifest = JSON.parse(readFileSync(path.join(deployments, "deployment.base-sepolia.json"), "utf8"));
    const address: string = manifest.gasTankDeposit.address;
    const data = encodeFunctionData({ abi: GasTankDepositArtifact.abi as Abi, functionName: "depositFor", args: [chain.accounts[6]!.address] });
    await chain.provider.request({ method: "eth_sendTransaction", params: [{ from: chain.accounts[5]!.address, to: address, data, value: `0x${parseEther("0.3").toString(16)}` }] });
    const shown = await cli(["deposit-contract", "show", "--network", "base-sepolia", "--json"]);
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.json).to.deep.equal({
      address,
      balanceWei: parseEther("0.3").toString(),
      owner: chain.accounts[0]!.address,
      pendingOwner: null,
      watched: false,
      warnings: ["the configuration of base-sepolia does not name it as depositContract: the service does not credit its deposits"],
    });
    const withdraw = ["deposit-contract", "withdraw", "--network", "base-sepolia", "--amount", "0.2eth", "--recipient", chain.accounts[4]!.address];
    const refused = await cli(withdraw);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include(`Withdraw 200000000000000000 wei from the gas-tank deposit contract on base-sepolia to ${chain.accounts[4]!.address}? — not confirmed: no terminal to ask on (give --yes)`);
    const balance = async () => BigInt((await chain.provider.request({ method: "eth_getBalance", params: [chain.accounts[4]!.address, "latest"] })) as string);
    const before = await balance();
    const done = await cli([...withdraw, "--yes", "--json"]);
    expect(done.code, done.stderr).to.equal(0);
    expect(done.json).to.deep.include({ paymaster: "GasTankDeposit", action: `withdraw 200000000000000000 wei to ${chain.accounts[4]!.address}` });
    expect((await balance()) - before).to.equal(parseEther("0.2"));
    expect((await cli(["deposit-contract", "show", "--network", "base-sepolia", "--json"])).json.balanceWei).to.equal(parseEther("0.1").toString());
    // More than it holds, or by a key that does not own it: refused, nothing sent.
    const tooMuch = await cli([...withdraw.slice(0, 5), "1eth", ...withdraw.slice(6), "--yes"]);
    expect(tooMuch.code).to.equal(2);
    expect(tooMuch.stderr).to.match(/GasTankDeposit\.withdraw 1000000000000000000 wei to 0x[0-9a-fA-F]{40}: refused/);
    const stranger = await cli([...withdraw, "--yes"], { PAYMASTER_OWNER_KEY: generatePrivateKey() });
    expect(stranger.code).to.equal(2);
    expect(stranger.stderr).to.match(/GasTankDeposit\.withdraw .*: refused/);
    // An EntryPoint as recipient (audit 2, N-3): the ether would become the contract's own, unwithdrawable deposit.
    const intoEntryPoint = await cli([...withdraw.slice(0, 7), ENTRY_POINT_V07_ADDRESS, "--yes"]);
    expect(intoEntryPoint.code).to.equal(2);
    expect(intoEntryPoint.stderr).to.include(`--recipient ${ENTRY_POINT_V07_ADDRESS} is an EntryPoint`);
    expect((await cli(["deposit-contract", "show", "--network", "base-sepolia", "--json"])).json.balanceWei).to.equal(parseEther("0.1").toString());
    // The way into a paymaster's deposit: depositToPaymaster, credited to that paymaster at its EntryPoint.
    const target = (manifest.paymasters as { label: string; address: string; entryPoint: string }[]).find((p) => p.label === "VerifyingPaymasterV07")!;
    const depositOf = async () => BigInt((await chain.provider.request({ method: "eth_call", params: [{ to: target.entryPoint, data: `0x70a08231${target.address.slice(2).toLowerCase().padStart(64, "0")}` }, "latest"] })) as string);
    const depositBefore = await depositOf();
    const funded = await cli(["deposit-contract", "fund-paymaster", "--network", "base-sepolia", "--paymaster", target.label, "--amount", "0.05eth", "--yes", "--json"]);
    expect(funded.code, funded.stderr).to.equal(0);
    expect((await depositOf()) - depositBefore).to.equal(parseEther("0.05"));
    expect((await cli(["deposit-contract", "show", "--network", "base-sepolia", "--json"])).json.balanceWei).to.equal(parseEther("0.05").toString());
  });

  it("bad input fails with a message naming what is wrong, and leaks no secret", async () => {
    const cases: [string[], Record<string, string>, number, RegExp][] = [
      [["status", "--network", "base-goerli"], {}, 2, /unknown network "base-goerli"/],
      [[...deployArgs.slice(0, 3), "--treasury", "0x1234", "--stake", "1eth"], {}, 2, /--treasury: "0x1234" is not an address/],
      [[...deployArgs.slice(0, 5), "--stake", "lots"], {}, 2, /--stake: "lots" is not an amount/],
      [deployArgs, { PAYMASTER_DEPLOYER_KEY: "" }, 2, /no deploying key: set PAYMASTER_DEPLOYER_KEY or PAYMASTER_DEPLOYER_KEY_FILE/],
      [deployArgs, { PAYMASTER_DEPLOYER_KEY: "0xnot-a-key" }, 2, /PAYMASTER_DEPLOYER_KEY: not a 32-byte hex private key/],
      [["status", "--network", "base-sepolia"], { PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:1/secret-path-key" }, 2, /the RPC of base-sepolia \(http:\/\/127\.0\.0\.1:1\/…\) does not answer/],
      [["status", "--network", "optimism-sepolia"], {}, 2, /no RPC URL for optimism-sepolia: .* PAYMASTER_NETWORK_OPTIMISM_SEPOLIA_RPC_URL/],
      [[...deployArgs.slice(0, 3), "--treasury", "0x000000000000000000000000000000000000dEaD", "--stake", "0.1eth", "--versions", "v0.7", "--signer", "0x00000000000000000000000000000000000000aa"], { PAYMASTER_DEPLOYER_KEY: generatePrivateKey() }, 1, /holds 0 wei; the deployment needs about \d+ wei/],
    ];
    for (const [args, extra, code, message] of cases) {
      const r = await cli(args, extra);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).to.equal(code);
      expect(r.stderr, args.join(" ")).to.match(message);
      expect(r.stderr).to.not.include("secret-path-key");
      expect(r.stderr).to.not.match(/\n\s+at /); // no stack trace
    }
  });
});
