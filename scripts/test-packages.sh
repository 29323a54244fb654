#!/usr/bin/env bash
# Every Debian package the suite's parts need, each installed by the same script that part runs first (the same
# lists, the same exit codes): SoftHSM2 and Redis (the service's tests), podman (its image tests), Chromium (the
# console's). scripts/test.sh runs this in the background so that the downloads overlap the build and the first
# packages' tests; a part that reaches its own install meanwhile waits for this one (ensure-debian-packages.sh's
# lock), then finds its program. Without root, or with everything there, each step returns at once.
set -uo pipefail
cd "$(dirname "$0")/.."
bash packages/service/scripts/ensure-softhsm.sh
bash packages/service/scripts/ensure-redis.sh
bash packages/service/scripts/podman-packages.sh
bash packages/console/scripts/ensure-chromium.sh
exit 0
