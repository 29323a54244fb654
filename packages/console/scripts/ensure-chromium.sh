#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the console's browser tests (playwright-core drives
# it; no browser is ever downloaded by Playwright). Installs it with apt-get when run as root; otherwise, under
# CI (CI=true) it fails with what to do, and elsewhere it says why the browser tests will be skipped.
# Exit 0: Chromium is there. Exit 3: it is not, and this is not CI (the tests are skipped). Exit 1: not there under CI.
set -euo pipefail
CHROMIUM="${PAYMASTER_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: installing Debian's chromium (apt-get)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends chromium >&2 && [ -x "$CHROMIUM" ]; then
    echo "ensure-chromium: $("$CHROMIUM" --version 2>/dev/null || echo chromium) installed" >&2
    exit 0
  fi
  echo "ensure-chromium: apt-get could not install chromium" >&2
fi
message="the console's browser tests need Debian's Chromium at $CHROMIUM: run 'apt-get update && apt-get install -y --no-install-recommends chromium' as root"
if [ "${CI:-}" = "true" ]; then
  echo "ensure-chromium: $message" >&2
  exit 1
fi
echo "ensure-chromium: $message; skipping the browser tests" >&2
exit 3
