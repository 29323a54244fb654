import { createRequire } from "node:module";
import hardhatEthers from "@nomicfoundation/hardhat-ethers";
import hardhatEthersChaiMatchers from "@nomicfoundation/hardhat-ethers-chai-matchers";
import hardhatMocha from "@nomicfoundation/hardhat-mocha";
import hardhatNetworkHelpers from "@nomicfoundation/hardhat-network-helpers";
import hardhatTypechain from "@nomicfoundation/hardhat-typechain";
import { defineConfig } from "hardhat/config";

// Compile offline from the pinned `solc` npm package: Hardhat never downloads a compiler.
const require = createRequire(import.meta.url);
const SOLC_VERSION = "0.8.28";
const solcPath = require.resolve("solc-0.8.28/soljson.js");

export default defineConfig({
  plugins: [hardhatEthers, hardhatEthersChaiMatchers, hardhatMocha, hardhatNetworkHelpers, hardhatTypechain],
  solidity: {
    profiles: {
      default: {
        version: SOLC_VERSION,
        path: solcPath,
        settings: { optimizer: { enabled: true, runs: 10_000 }, evmVersion: "cancun" },
      },
    },
  },
  networks: {
    default: { type: "edr-simulated", chainType: "l1", allowUnlimitedContractSize: false },
  },
  paths: { tests: { mocha: "test" } },
  test: { mocha: { timeout: 120_000 } },
  typechain: { outDir: "types/ethers-contracts" },
});
