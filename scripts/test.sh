#!/usr/bin/env bash
# The whole suite (the README's test command): every package's tests, one package at a time (turbo), while the
# Debian packages they need install in the background (scripts/test-packages.sh). Exits with the suite's status;
# what the background install printed follows the suite's output.
set -uo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp "${TMPDIR:-/tmp}/paymaster-test-packages-XXXXXX")"
bash scripts/test-packages.sh >"$log" 2>&1 &
packages=$!
turbo run test --concurrency=1
rc=$?
wait "$packages"
if [ -s "$log" ]; then
  echo "--- the test machine's Debian packages (installed in the background, scripts/test-packages.sh):"
  cat "$log"
fi
rm -f "$log"
exit "$rc"
