export * from "./types.ts";
export { ConfigError } from "./errors.ts";
export {
  buildConfig,
  configFilePath,
  loadConfig,
  networkEnvName,
  networkEnvVar,
  redactConfig,
  redactUrl,
  ENV_OVERRIDES,
  CONFIG_PATH_ENV,
  type RedactedNetworkConfig,
  type RedactedServiceConfig,
} from "./load.ts";
export { localNetworkConfig, type LocalNetworkOptions } from "./local.ts";
export { isLoopbackHost } from "./schema.ts";
