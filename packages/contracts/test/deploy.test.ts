// The local deployment: canonical EntryPoints, idempotence, refusal of non-local chains, and the in-process
// chain served over HTTP on loopback.
import { expect } from "chai";
import { network } from "hardhat";
import { JsonRpcProvider, Wallet } from "ethers";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, ENTRY_POINT_V08_ADDRESS } from "@paymaster/shared";
import { deployLocalStack, parseManifest } from "../src/deploy/index.ts";
import { startLocalChain } from "../src/localChain.ts";
import { ethers, loadStack, SIGNER_KEY } from "./helpers/stack.ts";

describe("deployLocalStack", () => {
  it("puts the three EntryPoints at their canonical addresses with code (v0.8 also its 7702 delegate)", async () => {
    const { manifest } = await loadStack();
    expect(manifest.entryPoints["v0.6"].entryPoint).to.equal(ENTRY_POINT_V06_ADDRESS);
    expect(manifest.entryPoints["v0.7"].entryPoint).to.equal(ENTRY_POINT_V07_ADDRESS);
    expect(manifest.entryPoints["v0.8"].entryPoint).to.equal(ENTRY_POINT_V08_ADDRESS);
    expect(manifest.entryPoints["v0.8"].simple7702Account).to.match(/^0x[0-9a-fA-F]{40}$/);
    for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
      for (const address of Object.values(manifest.entryPoints[version])) {
        expect(await ethers.provider.getCode(address), `${version} ${address}`).to.not.equal("0x");
      }
    }
    expect(manifest.tokens.map((t) => [t.symbol, t.decimals])).to.deep.equal([
      ["USDC", 6],
      ["DAI", 18],
    ]);
  });

  it("is idempotent: a second run sends no transaction and returns the same addresses", async () => {
    const { manifest, treasury } = await loadStack();
    const [deployer] = await ethers.getSigners();
    const nonceBefore = await ethers.provider.getTransactionCount(await deployer!.getAddress());
    const again = await deployLocalStack(deployer!, { signers: [new Wallet(SIGNER_KEY).address], treasury });
    expect(await ethers.provider.getTransactionCount(await deployer!.getAddress())).to.equal(nonceBefore);
    expect({ ...again, deployedAt: "" }).to.deep.equal({ ...manifest, deployedAt: "" });
  });

  it("tops up a drained deposit on a re-run", async () => {
    const { manifest, treasury, v } = await loadStack();
    const [deployer] = await ethers.getSigners();
    const paymaster = v["v0.7"].verifying;
    await (await paymaster.getFunction("withdrawTo")(treasury, 10n ** 18n)).wait();
    await deployLocalStack(deployer!, { signers: [new Wallet(SIGNER_KEY).address], treasury });
    expect(await paymaster.getFunction("getDeposit")()).to.equal(100n * 10n ** 18n);
    expect(manifest.entryPoints["v0.7"].verifyingPaymaster).to.equal(await paymaster.getAddress());
  });

  it("refuses a chain that is not local unless told otherwise", async () => {
    const other = await network.create({ override: { chainId: 10 } });
    const [deployer] = await other.ethers.getSigners();
    const options = { signers: [new Wallet(SIGNER_KEY).address], treasury: await deployer!.getAddress() };
    let refused: unknown;
    try {
      await deployLocalStack(deployer!, options);
    } catch (error) {
      refused = error;
    }
    expect(String(refused)).to.match(/10/);
    const manifest = await deployLocalStack(deployer!, { ...options, allowNonLocalChain: true });
    expect(manifest.chainId).to.equal(10);
    await other.close();
  });

  it("writes a manifest that parses back, and rejects a malformed one", async () => {
    const { manifest } = await loadStack();
    expect(parseManifest(JSON.parse(JSON.stringify(manifest)))).to.deep.equal(manifest);
    expect(() => parseManifest({ ...manifest, entryPoints: { "v0.6": {} } })).to.throw(/entryPoints/);
  });
});

describe("startLocalChain", () => {
  it("serves the in-process chain over HTTP on 127.0.0.1 only, and refuses other hosts", async () => {
    let refused: unknown;
    try {
      await startLocalChain({ host: "0.0.0.0", port: 0 });
    } catch (error) {
      refused = error;
    }
    expect(String(refused)).to.match(/loopback|0\.0\.0\.0/);

    const chain = await startLocalChain({ port: 0 });
    try {
      expect(chain.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      const provider = new JsonRpcProvider(chain.url, undefined, { cacheTimeout: -1 });
      expect((await provider.getNetwork()).chainId).to.equal(31337n);
      const [first] = chain.accounts;
      expect(await provider.getBalance(first!.address)).to.equal(first!.balance);
      provider.destroy();
    } finally {
      await chain.close();
    }
    const closed = new JsonRpcProvider(chain.url, 31337, { staticNetwork: true });
    let down: unknown;
    try {
      await closed.getBlockNumber();
    } catch (error) {
      down = error;
    }
    expect(down, "the server is closed").to.not.equal(undefined);
    closed.destroy();
  });
});
