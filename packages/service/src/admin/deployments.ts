/**
 * Where `paymaster deploy` writes its manifests and the on-chain commands read them (deployment.<network>.json),
 * unless --deployments says otherwise. A module of its own so that the command line can name it in its help
 * without loading the on-chain code (ethers, the contracts' deploy helpers).
 */
export const DEFAULT_DEPLOYMENTS_DIR = "deployments";
