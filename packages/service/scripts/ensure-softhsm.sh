#!/usr/bin/env bash
# Makes sure Debian's SoftHSM2 (the PKCS#11 token the signer tests use) is installed. Installs it with apt-get
# when run as root; otherwise, under CI (CI=true) it fails with what to do, and elsewhere it says why the PKCS#11
# tests will be skipped. Exit 0: SoftHSM2 is there. Exit 3: it is not, and this is not CI. Exit 1: not there under CI.
set -euo pipefail
MODULE="${PAYMASTER_SOFTHSM2_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
if [ -f "$MODULE" ] && command -v softhsm2-util >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-softhsm: installing Debian's softhsm2 (apt-get)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends softhsm2 >&2 && [ -f "$MODULE" ]; then
    echo "ensure-softhsm: $(softhsm2-util --version 2>/dev/null | head -1 || echo softhsm2) installed" >&2
    exit 0
  fi
  echo "ensure-softhsm: apt-get could not install softhsm2" >&2
fi
message="the PKCS#11 signer tests need Debian's SoftHSM2 ($MODULE): run 'apt-get update && apt-get install -y --no-install-recommends softhsm2' as root"
if [ "${CI:-}" = "true" ]; then
  echo "ensure-softhsm: $message" >&2
  exit 1
fi
echo "ensure-softhsm: $message; skipping the PKCS#11 tests" >&2
exit 3
