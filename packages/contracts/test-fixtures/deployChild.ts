// A deployment in its own process, for the test that kills it halfway (test/networkDeploy.test.ts): the same
// configuration as the test's configFor, one "sent <label>" line per mined transaction.
import { JsonRpcProvider, Wallet, parseEther } from "ethers";
import { executeNetworkDeploy, planNetworkDeploy } from "../src/deploy/network.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const provider = new JsonRpcProvider(env("DEPLOY_RPC_URL"), undefined, { cacheTimeout: -1 });
const deployer = new Wallet(env("DEPLOY_KEY"), provider);
const plan = await planNetworkDeploy(provider, deployer.address as `0x${string}`, {
  network: "base-sepolia",
  versions: ["v0.6", "v0.7"],
  owner: deployer.address as `0x${string}`,
  signers: [env("DEPLOY_SIGNER") as `0x${string}`],
  treasury: env("DEPLOY_TREASURY") as `0x${string}`,
  tokens: ["0x036CbD53842c5426634e7929541eC2318f3dCF7e"],
  depositTarget: parseEther("0.5"),
  stakeAmount: parseEther("0.1"),
  unstakeDelaySec: 86_400,
});
await executeNetworkDeploy(deployer, plan, (line) => process.stdout.write(`sent ${line}\n`));
