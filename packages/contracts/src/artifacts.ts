/**
 * ABIs and bytecode (`as const`, for viem's type inference) of our paymasters, TestToken and the
 * eth-infinitism EntryPoint stack. Generated into types/artifacts by scripts/export-artifacts.ts.
 */
export * from "../types/artifacts/index.ts";
export {
  CREATE2_DEPLOYER_ADDRESS,
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V07_ADDRESS,
} from "./deploy/constants.ts";
