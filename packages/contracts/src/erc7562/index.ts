// ERC-7562 conformance of a traced validation: the call-frame reader and the rule checker.
export * from "./frames.ts";
export * from "./checker.ts";
