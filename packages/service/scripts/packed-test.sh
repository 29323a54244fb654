#!/usr/bin/env bash
# The npm packages as a stranger gets them: `pnpm pack` tarballs of shared, contracts, console and service (built
# by `pnpm build`; `pnpm test` builds first), installed with plain npm into a fresh project outside the monorepo
# (no workspace links), then test/packed.test.ts drives that project: `npx paymaster start`, the operator CLI
# with a configuration file, and the project's own node:test file using the testkit, twice in parallel.
#
# npm installs from the registry here, before the test, like any project install (CI has the registry for pnpm
# install; a warm ~/.npm cache makes it fast). The test itself then reaches nothing beyond loopback, inside a
# loopback-only network namespace where one can be made (alto is bound to 127.0.0.1 in any case).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVICE_DIR="$PWD"
PACKAGES="$(cd .. && pwd)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/paymaster-packed-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
PACKS="$WORK/packs"
CONSUMER="$WORK/consumer"
mkdir -p "$PACKS" "$CONSUMER"

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
(cd "$CONSUMER" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
echo "packed and installed with npm in $(( $(date +%s) - started )) s: $CONSUMER" >&2

NODE="$(command -v node)"
MOCHA="$SERVICE_DIR/node_modules/mocha/bin/mocha.js"
export PACKED_CONSUMER="$CONSUMER"
if unshare -n true 2>/dev/null; then
  unshare -n -- bash -c 'ip link set lo up && exec "$0" "$@"' "$NODE" "$MOCHA" test/packed.test.ts "$@"
else
  "$NODE" "$MOCHA" test/packed.test.ts "$@"
fi
