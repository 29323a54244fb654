/**
 * `pnpm start` and the image's entry point: the same as `paymaster start …` (src/cli/commands/start.ts), so the
 * service has one command line everywhere (`--config <file>`, `--no-watch`, `--help`).
 */
process.argv.splice(2, 0, "start");
await import("./cli/main.ts");
