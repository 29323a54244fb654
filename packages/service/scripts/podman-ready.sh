#!/usr/bin/env bash
# Makes podman usable for the tests that run images (container-test.sh, and packed-test.sh's install in the slim
# Node image): root (rootful podman), Debian's podman and its helpers, the settings these machines need
# (test/container/containers.conf, printed for the caller to export as CONTAINERS_CONF) and the base images
# (container-base-image.sh). Prints the CONTAINERS_CONF path on stdout.
# Exit 0: ready. Exit 3: not here (the reason on stderr; the caller skips, or fails under CI). Other: a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != "0" ]; then
  echo "podman-ready: it needs root (rootful podman; podman is installed with apt-get)" >&2
  exit 3
fi
bash scripts/podman-packages.sh
rc=$?
if [ "$rc" -eq 3 ]; then
  echo "podman-ready: podman is not installed and could not be" >&2
  exit 3
fi
[ "$rc" -eq 0 ] || exit "$rc"
export CONTAINERS_CONF="$PWD/test/container/containers.conf"
bash scripts/container-base-image.sh >&2 || exit 1
echo "$CONTAINERS_CONF"
