#!/usr/bin/env bash
# Runs the tests that start alto (a real ERC-4337 bundler: test/bundler.test.ts, bundlerForward.test.ts, localStack.test.ts,
# operatorJourney.test.ts) inside a fresh loopback-only network namespace. The local stack binds alto to 127.0.0.1
# (src/local/bundler.ts: a preload, checked in the socket table); the namespace keeps the tests safe even if that broke.
# Needs root (unshare -n); without it the bundler test is skipped with a message and exit 0 (exit 1 under CI).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! unshare -n true 2>/dev/null; then
  if [ -n "${CI:-}" ]; then
    echo "FAILED: CI must run test/bundler.test.ts, but a network namespace cannot be created here (unshare -n needs root)." >&2
    exit 1
  fi
  echo "SKIPPED test/bundler.test.ts: cannot create a network namespace (unshare -n needs root); alto binds every interface, so it only runs in a loopback-only namespace." >&2
  exit 0
fi

# The node pnpm put on PATH (Node 22 from the `node` package), and this package's mocha.
NODE="$(command -v node)"
MOCHA="$PWD/node_modules/mocha/bin/mocha.js"

exec unshare -n -- bash -c 'ip link set lo up && exec "$0" "$@"' "$NODE" "$MOCHA" test/bundler.test.ts test/bundlerForward.test.ts test/localStack.test.ts test/operatorJourney.test.ts "$@"
