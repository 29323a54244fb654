/**
 * `pnpm paymaster <command>` (and the service package's `paymaster` bin): the operator command, and `start`, the
 * service itself. See program.ts for the commands and exit codes, packages/service/docs/cli.md for the reference.
 */
import { runCli } from "./program.ts";

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
});
// A failed command ends the process even if something it opened is still half-open (a start that failed midway);
// a successful `start` keeps serving until a signal.
if (code !== 0) process.exit(code);
