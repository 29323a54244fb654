/**
 * @paymaster/contracts: ABIs/bytecode, the idempotent local deployment, the deployment manifest and the
 * in-process local chain. Hardhat is only loaded when `startLocalChain` is called.
 */
export * from "./artifacts.ts";
export * from "./deploy/index.ts";
export { startLocalChain, loopbackHost } from "./localChain.ts";
export type { LocalAccount, LocalChain, LocalChainOptions } from "./localChain.ts";
export { startLocalStack } from "./localStack.ts";
export type { LocalStack } from "./localStack.ts";
