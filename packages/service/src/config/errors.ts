/**
 * The configuration was refused. `issues` lists every problem found (not just the first), each as
 * "<field path>[ (from <ENV_VAR>)]: <what is wrong>"; `message` is all of them, one per line. Neither ever
 * contains a secret's value.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  readonly issues: readonly string[];

  constructor(issues: readonly string[], source?: string) {
    const head = source === undefined ? "invalid configuration" : `invalid configuration (${source})`;
    super(`${head}:\n${issues.map((issue) => `  - ${issue}`).join("\n")}`);
    this.issues = Object.freeze([...issues]);
  }
}
