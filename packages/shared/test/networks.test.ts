import { expect } from "chai";
import {
  chainIdOf,
  gasKindOf,
  isGasKind,
  ENTRY_POINT_ADDRESSES,
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V07_ADDRESS,
  ENTRY_POINT_V08_ADDRESS,
  findNetwork,
  isEntryPointVersion,
  isNetworkSlug,
  knownNetworkNames,
  isNetworkName,
  NETWORK_NAMES,
  NETWORKS,
  networkOfChainId,
} from "../src/index.ts";
import { getAddress } from "viem";

describe("networks", () => {
  it("maps every network to its chain id", () => {
    const expected = {
      "ethereum-mainnet": 1,
      "ethereum-sepolia": 11155111,
      "optimism-mainnet": 10,
      "optimism-sepolia": 11155420,
      "arbitrum-one": 42161,
      "arbitrum-nova": 42170,
      "arbitrum-sepolia": 421614,
      "scroll-mainnet": 534352,
      "scroll-sepolia": 534351,
      "base-mainnet": 8453,
      "base-sepolia": 84532,
      local: 31337,
    };
    expect(Object.fromEntries(NETWORK_NAMES.map((name) => [name, chainIdOf(name)]))).to.deep.equal(expected);
    expect(Object.keys(NETWORKS)).to.have.members(Object.keys(expected));
  });

  it("has unique chain ids with a reverse lookup", () => {
    const ids = NETWORK_NAMES.map(chainIdOf);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(networkOfChainId(8453)).to.equal("base-mainnet");
    expect(networkOfChainId(31337n)).to.equal("local");
    expect(networkOfChainId(5)).to.equal(undefined);
  });

  it("isNetworkName accepts only registry names", () => {
    expect(isNetworkName("arbitrum-nova")).to.equal(true);
    expect(isNetworkName("local")).to.equal(true);
    for (const bad of ["mainnet", "Base-Mainnet", "toString", "__proto__", "", 1, undefined, null]) {
      expect(isNetworkName(bad), String(bad)).to.equal(false);
    }
  });

  it("gives each network the way its chain charges for L1 data", () => {
    const rollups = Object.fromEntries(NETWORK_NAMES.filter((name) => gasKindOf(name) !== "l1").map((name) => [name, gasKindOf(name)]));
    expect(rollups).to.deep.equal({
      "optimism-mainnet": "op-stack",
      "optimism-sepolia": "op-stack",
      "base-mainnet": "op-stack",
      "base-sepolia": "op-stack",
      "arbitrum-one": "arbitrum",
      "arbitrum-nova": "arbitrum",
      "arbitrum-sepolia": "arbitrum",
      "scroll-mainnet": "scroll",
      "scroll-sepolia": "scroll",
    });
    expect(gasKindOf("ethereum-mainnet")).to.equal("l1");
    expect(gasKindOf("local")).to.equal("l1");
    expect(isGasKind("op-stack")).to.equal(true);
    for (const bad of ["optimism", "L1", "", "toString", 1, null]) expect(isGasKind(bad), String(bad)).to.equal(false);
  });

  it("finds a network in the registry first, then among declared custom ones; names are lowercase slugs", () => {
    const custom = [{ name: "polygon-amoy", chainId: 80002, gasKind: "l1" as const }];
    expect(findNetwork("base-sepolia", custom)).to.deep.equal({ name: "base-sepolia", chainId: 84532, gasKind: "op-stack" });
    expect(findNetwork("polygon-amoy", custom)).to.deep.equal(custom[0]);
    expect(findNetwork("polygon-amoy")).to.equal(undefined);
    expect(findNetwork("toString", custom)).to.equal(undefined);
    expect(knownNetworkNames(custom)).to.deep.equal([...NETWORK_NAMES, "polygon-amoy"]);
    for (const name of NETWORK_NAMES) expect(isNetworkSlug(name), name).to.equal(true);
    for (const good of ["my-chain", "linea", "a", "chain-2", "x".repeat(64)]) expect(isNetworkSlug(good), good).to.equal(true);
    for (const bad of ["My-Chain", "my_chain", "my chain", "-chain", "chain-", "a--b", "a/b", "", "x".repeat(65), 5, null]) {
      expect(isNetworkSlug(bad), String(bad)).to.equal(false);
    }
  });

  it("is frozen", () => {
    expect(Object.isFrozen(NETWORKS)).to.equal(true);
    expect(Object.isFrozen(NETWORK_NAMES)).to.equal(true);
  });

  it("has the canonical, checksummed EntryPoint addresses", () => {
    expect(ENTRY_POINT_V06_ADDRESS).to.equal("0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789");
    expect(ENTRY_POINT_V07_ADDRESS).to.equal("0x0000000071727De22E5E9d8BAf0edAc6f37da032");
    expect(getAddress(ENTRY_POINT_V06_ADDRESS)).to.equal(ENTRY_POINT_V06_ADDRESS);
    expect(getAddress(ENTRY_POINT_V07_ADDRESS)).to.equal(ENTRY_POINT_V07_ADDRESS);
    expect(ENTRY_POINT_V08_ADDRESS).to.equal("0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108");
    expect(getAddress(ENTRY_POINT_V08_ADDRESS)).to.equal(ENTRY_POINT_V08_ADDRESS);
    expect(ENTRY_POINT_ADDRESSES).to.deep.equal({
      "v0.6": ENTRY_POINT_V06_ADDRESS,
      "v0.7": ENTRY_POINT_V07_ADDRESS,
      "v0.8": ENTRY_POINT_V08_ADDRESS,
    });
    expect(isEntryPointVersion("v0.7")).to.equal(true);
    expect(isEntryPointVersion("v0.8")).to.equal(true);
    expect(isEntryPointVersion("v0.9")).to.equal(false);
    expect(isEntryPointVersion("0.7")).to.equal(false);
  });
});
