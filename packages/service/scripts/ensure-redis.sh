#!/usr/bin/env bash
# Makes sure a Redis server binary is there for the tests' throwaway Redis (test/helpers/throwawayServers.ts), unless
# REDIS_URL names a server to use. As root it installs Debian's redis-tools: that package ships the whole server (as
# redis-check-rdb, which the tests start under the name redis-server) without installing or starting a system service.
# Exit 0 outside CI whatever happens (the Redis tests then say why they skip); exit 1 under CI when there is none.
set -uo pipefail
if [ -n "${REDIS_URL:-}" ] || [ -n "${PAYMASTER_TEST_REDIS_SERVER:-}" ] || command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
bash "$(dirname "$0")/../../../scripts/ensure-debian-packages.sh" /usr/bin/redis-check-rdb "the Redis tests" redis-tools
rc=$?
[ "$rc" -eq 3 ] && exit 0
exit "$rc"
