#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the console's browser tests (playwright-core drives
# it; no browser is ever downloaded by Playwright): installed with apt-get when run as root; otherwise, under
# CI (CI=true) it fails with what to do, and elsewhere it says why the browser tests will be skipped.
# Exit 0: Chromium is there. Exit 3: it is not, and this is not CI (the tests are skipped). Exit 1: not there under CI.
set -euo pipefail
exec bash "$(dirname "$0")/../../../scripts/ensure-debian-packages.sh" "${PAYMASTER_CHROMIUM:-/usr/bin/chromium}" "the console's browser tests" chromium
