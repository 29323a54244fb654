#!/usr/bin/env bash
# The npm packages as a stranger gets them: `pnpm pack` tarballs of shared, contracts, console and service (built
# by `pnpm build`; `pnpm test` builds first), installed with plain npm into a fresh project outside the monorepo
# (no workspace links), then test/packed.test.ts drives that project: `npx paymaster start`, the operator CLI
# with a configuration file, the contracts' ABIs and bindings, and the project's own node:test file using the
# testkit, twice in parallel; and a fresh Hardhat project and a fresh Foundry project that compile a paymaster
# extending ours (the Foundry one runs a forge test sponsoring an op through the canonical EntryPoint).
#
# npm installs from the registry here, before the test, like any project install (CI has the registry for pnpm
# install; a warm ~/.npm cache makes it fast). The test itself then reaches nothing beyond loopback, inside a
# loopback-only network namespace where one can be made (alto is bound to 127.0.0.1 in any case).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVICE_DIR="$PWD"
PACKAGES="$(cd .. && pwd)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/paymaster-packed-XXXXXX")"
# PACKED_KEEP=1 keeps the projects (to rerun test/packed.test.ts by hand with the PACKED_* variables printed).
[ -n "${PACKED_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
PACKS="$WORK/packs"
CONSUMER="$WORK/consumer"
HARDHAT="$WORK/hardhat-project"
FOUNDRY="$WORK/foundry-project"
mkdir -p "$PACKS" "$CONSUMER" "$HARDHAT/contracts" "$FOUNDRY/src"

# pnpm runs this script with itself on PATH; run by hand, the pinned pnpm comes through npx.
command -v pnpm >/dev/null || pnpm() { npx -y pnpm@10.34.9 "$@"; }

started=$(date +%s)
for package in shared contracts console service; do
  (cd "$PACKAGES/$package" && pnpm pack --pack-destination "$PACKS" >/dev/null)
done
tarball() { ls "$PACKS"/paymaster-"$1"-*.tgz; }

# A fresh project: the service (with the testkit) and viem, the way a team adds them. The other @paymaster
# packages come from their tarballs too (npm would otherwise look them up in the registry).
cat > "$CONSUMER/package.json" <<JSON
{
  "name": "packed-consumer",
  "private": true,
  "type": "module",
  "dependencies": { "@paymaster/service": "file:$(tarball service)", "viem": "2.57.20" },
  "overrides": {
    "@paymaster/shared": "file:$(tarball shared)",
    "@paymaster/contracts": "file:$(tarball contracts)",
    "@paymaster/console": "file:$(tarball console)"
  }
}
JSON
cp test/fixtures/packed/sponsored.test.mjs "$CONSUMER/a.test.mjs"
cp test/fixtures/packed/sponsored.test.mjs "$CONSUMER/b.test.mjs"

# A fresh Hardhat 3 project and a fresh Foundry project (forge from npm), each with @paymaster/contracts and a
# paymaster that extends ours; both compile with the `solc` npm package, so nothing but npm downloads anything.
contracts_project() { # <dir> <devDependencies JSON>
  cat > "$1/package.json" <<JSON
{
  "name": "$(basename "$1")",
  "private": true,
  "type": "module",
  "devDependencies": { "@paymaster/contracts": "file:$(tarball contracts)", "solc": "0.8.28", $2 },
  "overrides": { "@paymaster/shared": "file:$(tarball shared)" }
}
JSON
}
contracts_project "$HARDHAT" '"hardhat": "3.18.0"'
cp test/fixtures/packed/hardhat/hardhat.config.js "$HARDHAT/"
cp test/fixtures/packed/MyPaymaster.sol "$HARDHAT/contracts/"
contracts_project "$FOUNDRY" '"@foundry-rs/forge": "1.7.1"'
cp -r test/fixtures/packed/foundry/. "$FOUNDRY/"
cp test/fixtures/packed/MyPaymaster.sol "$FOUNDRY/src/"

# The three installs at once (mostly waiting on the registry).
pids=()
for project in "$CONSUMER" "$HARDHAT" "$FOUNDRY"; do
  (cd "$project" && npm install --no-audit --no-fund --loglevel=error >/dev/null) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "packed and installed with npm in $(( $(date +%s) - started )) s: $WORK" >&2

NODE="$(command -v node)"
MOCHA="$SERVICE_DIR/node_modules/mocha/bin/mocha.js"
export PACKED_CONSUMER="$CONSUMER" PACKED_HARDHAT="$HARDHAT" PACKED_FOUNDRY="$FOUNDRY"
if unshare -n true 2>/dev/null; then
  unshare -n -- bash -c 'ip link set lo up && exec "$0" "$@"' "$NODE" "$MOCHA" test/packed.test.ts "$@"
else
  "$NODE" "$MOCHA" test/packed.test.ts "$@"
fi
