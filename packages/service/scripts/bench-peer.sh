#!/usr/bin/env bash
# The side-by-side benchmark: our service and Pimlico's mock-paymaster (with the Alto bundler for its
# pm_sponsorUserOperation) on one local chain, alternating round by round. Alto binds every interface, so
# the whole run happens inside a fresh loopback-only network namespace (needs root: unshare -n).
# Extra arguments go to bench/erc7677.ts (e.g. --rounds 2 --ops 120 --skip-final).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! unshare -n true 2>/dev/null; then
  echo "bench-peer: cannot create a network namespace (unshare -n needs root); Alto must not run outside one." >&2
  exit 1
fi
NODE="$(command -v node)"
exec unshare -n -- bash -c 'ip link set lo up && exec "$0" --disable-warning=ExperimentalWarning bench/erc7677.ts --peer --alto "$@"' "$NODE" "$@"
