#!/usr/bin/env bash
# The npm packages as a stranger gets them: `pnpm pack` tarballs of shared, contracts, console and service (built
# by `pnpm build`; `pnpm test` builds first), installed with plain npm into a fresh project outside the monorepo
# (no workspace links), then test/packed.test.ts drives that project: `npx paymaster start`, the operator CLI
# with a configuration file, the contracts' ABIs and bindings, and the project's own node:test file using the
# testkit, twice in parallel, and its TypeScript type-checked against the packages' declarations with
# skipLibCheck false (without pkcs11js); and a fresh Hardhat project and a fresh Foundry project that compile a paymaster
# extending ours (the Foundry one runs a forge test sponsoring an op through the canonical EntryPoint). The same
# tarballs are also installed with npm inside node:22-bookworm-slim, which has no python3, make or C++ compiler
# (podman, as root: scripts/podman-ready.sh; skipped with the reason where podman cannot run, a failure under CI).
#
# npm installs from the registry here, before the test, like any project install (CI has the registry for pnpm
# install; a warm ~/.npm cache makes it fast). The test itself then reaches nothing beyond loopback, inside a
# loopback-only network namespace where one can be made (alto is bound to 127.0.0.1 in any case).
set -euo pipefail
cd "$(dirname "$0")/.."
# The installs need the npm registry, as any project install does. Without it npm waits out its retries (a run in
# a network namespace without a network sat there for 15 minutes): say so at once instead; under CI a failure, a
# skip with the reason elsewhere (as the container image test does).
if ! timeout 15 npm ping --loglevel=error >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAILED: the packed test installs the tarballs from the npm registry, which did not answer (npm ping, 15 s)." >&2
    exit 1
  fi
  echo "SKIPPED test/packed.test.ts: the npm registry did not answer (npm ping, 15 s); the packed test installs the tarballs from it." >&2
  exit 0
fi
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

# A fresh project: the service (with the testkit) and viem, the way a team adds them, and TypeScript to type-check
# its own code against the packages' declarations (no pkcs11js: the optional peer is not installed). The other
# @paymaster packages come from their tarballs too (npm would otherwise look them up in the registry).
cat > "$CONSUMER/package.json" <<JSON
{
  "name": "packed-consumer",
  "private": true,
  "type": "module",
  "dependencies": { "@paymaster/service": "file:$(tarball service)", "viem": "2.57.20" },
  "devDependencies": { "typescript": "5.9.3", "@types/node": "22.20.5" },
  "overrides": {
    "@paymaster/shared": "file:$(tarball shared)",
    "@paymaster/contracts": "file:$(tarball contracts)",
    "@paymaster/console": "file:$(tarball console)"
  }
}
JSON
# The consumer project once more, installed inside node:22-bookworm-slim (no compiler) while the host installs run:
# it shares the host's npm cache (mounted), so it downloads what the host installs download anyway.
SLIM="$WORK/slim"
mkdir -p "$SLIM/outcome"
cp "$CONSUMER/package.json" "$SLIM/"
cp test/fixtures/packed/slim-install.sh "$SLIM/"
(
  if conf="$(bash scripts/podman-ready.sh 2>"$SLIM/podman-ready.log")"; then
    export CONTAINERS_CONF="$conf"
    ca=()
    [ -z "${NODE_EXTRA_CA_CERTS:-}" ] || ca=(-v "$NODE_EXTRA_CA_CERTS:$NODE_EXTRA_CA_CERTS:ro" -e NODE_EXTRA_CA_CERTS)
    cache="${npm_config_cache:-$HOME/.npm}"
    mkdir -p "$cache"
    podman run --rm -v "$PACKS:$PACKS:ro" -v "$SLIM:/consumer" -v "$cache:/root/.npm" "${ca[@]}" \
      -e npm_config_update_notifier=false -w /consumer docker.io/library/node:22-bookworm-slim sh /consumer/slim-install.sh >"$SLIM/podman.log" 2>&1 \
      && echo 0 > "$SLIM/podman.rc" || echo $? > "$SLIM/podman.rc"
  else
    { echo "podman-ready exited with $?:"; cat "$SLIM/podman-ready.log"; } > "$SLIM/skipped"
  fi
) &
slim_pid=$!
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
wait "$slim_pid" || true
if [ -f "$SLIM/skipped" ]; then
  echo "no install in node:22-bookworm-slim: $(cat "$SLIM/skipped")" >&2
else
  echo "installed in node:22-bookworm-slim (no compiler) in $(cat "$SLIM/outcome/install.ms" 2>/dev/null || echo '?') ms (npm install alone), $(( $(date +%s) - started )) s since packing" >&2
fi

NODE="$(command -v node)"
MOCHA="$SERVICE_DIR/node_modules/mocha/bin/mocha.js"
export PACKED_CONSUMER="$CONSUMER" PACKED_HARDHAT="$HARDHAT" PACKED_FOUNDRY="$FOUNDRY" PACKED_SLIM="$SLIM" PACKED_PACKS="$PACKS"
if unshare -n true 2>/dev/null; then
  unshare -n -- bash -c 'ip link set lo up && exec "$0" "$@"' "$NODE" "$MOCHA" test/packed.test.ts "$@"
else
  "$NODE" "$MOCHA" test/packed.test.ts "$@"
fi
