#!/usr/bin/env bash
# Makes sure Debian's SoftHSM2 (the PKCS#11 token the signer tests use) is installed, through the project's one
# installer of Debian test dependencies (scripts/ensure-debian-packages.sh: apt-get as root). Exit 0: SoftHSM2 is
# there. Exit 3: it is not, and this is not CI (the PKCS#11 tests are skipped, saying why). Exit 1: not there under CI.
set -uo pipefail
MODULE="${PAYMASTER_SOFTHSM2_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
if [ -f "$MODULE" ] && command -v softhsm2-util >/dev/null 2>&1; then
  exit 0
fi
bash "$(dirname "$0")/../../../scripts/ensure-debian-packages.sh" /usr/bin/softhsm2-util "the PKCS#11 signer tests" softhsm2
rc=$?
if [ "$rc" -eq 0 ] && [ ! -f "$MODULE" ]; then
  echo "ensure-softhsm: softhsm2 is installed but its module is not at $MODULE (set PAYMASTER_SOFTHSM2_MODULE)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 3
fi
exit "$rc"
