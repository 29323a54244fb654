#!/usr/bin/env bash
# The container image test (test/container.test.ts): podman builds the image from the repository's Containerfile and
# the test runs it. Installs what it needs as root (scripts/podman-ready.sh: Debian's podman and its helpers, and the
# base image: see container-base-image.sh). It needs root (rootful podman) and, for the first build on a machine, the
# npm registry and the Debian mirror; without root it is skipped with that message (a failure under CI).
# PAYMASTER_SKIP_CONTAINER_TEST=1 skips it on purpose (say, on a machine without the registries), with a message,
# outside CI only.
set -uo pipefail
cd "$(dirname "$0")/.."
skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAILED: CI must run test/container.test.ts, but $1." >&2
    exit 1
  fi
  echo "SKIPPED test/container.test.ts: $1." >&2
  exit 0
}
[ -z "${PAYMASTER_SKIP_CONTAINER_TEST:-}" ] || skip "PAYMASTER_SKIP_CONTAINER_TEST is set"
conf="$(bash scripts/podman-ready.sh)"
rc=$?
[ "$rc" -eq 3 ] && skip "podman cannot run here (see above)"
[ "$rc" -eq 0 ] || exit "$rc"
export CONTAINERS_CONF="$conf"
exec mocha test/container.test.ts
